import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Papa from "papaparse";
import type { ObjectStore } from "../adapters/storage/port";
import type { RowError, RunCounts } from "../domain/runs";
import { compileMapping, schemaProperties } from "./map";
import { openInput } from "./parse";
import { isGzip } from "./parse/bytes";
import { Cancelled, chunksOf, MAX_REPORTED_ERRORS, parseOptions, pumpRows } from "./process";
import { DEFAULT_MIN_SPLIT_BYTES, type ParseOptions, type ProcessOutcome, type ProcessRequest } from "./types";
import { trace } from "./trace";
import { validatorFor } from "./validate";
import { jsonWriter } from "./write";
import { FileWriter, openSink, type Sink } from "./write/sink";

/**
 * One file on several worker threads (docs/decisions/engine.md, "Performance").
 * A CSV, TSV or NDJSON original (not gzip, UTF-8, JSON output) is cut into
 * byte ranges at line ends; the lead worker reads the first range and writes
 * the processed file, helpers read the others into temp files of bare rows,
 * and the lead appends them in order. A cut is only guessed (the first line
 * end after the range's share of the bytes); it is proven when the range before it
 * parses to its end without an open quote. Anything else (a cut inside a
 * quoted field, any invalid row that stops a run, a parse error, a helper that
 * died) makes the lead drop the parts and read the whole file alone, so every
 * failed run's outcome is the single-worker one, and every successful run's
 * files, counts and errors are byte for byte what one worker writes.
 */

export { DEFAULT_MIN_SPLIT_BYTES } from "./types";
/** Bytes looked at for the format and the header (as openInput does). */
const HEAD_BYTES = 64 * 1024;
/**
 * The lead's share of the bytes relative to a helper's. Each part writes
 * its own rows, so the shares are nearly equal; the lead then copies
 * the helpers' rows (about 1 GB/s), which overlaps their work only when the
 * lead is done first, so it gets a little less. (0.7 while the lead also
 * hashed the helpers' rows; on the 1M-row bench file 0.7 then left the lead
 * idle for a third of the time, and 1.15 made it copy 95 MB after the helper
 * had finished.)
 */
const LEAD_WEIGHT = 0.95;
/** How far past an even cut a line end is looked for. */
const CUT_WINDOW = 1024 * 1024;
const COPY_CHUNK = 1024 * 1024;
const FOLLOW_POLL_MS = 5;

export interface PartSpec {
  /** 0 is the lead's range (from the file's start); helpers get 1.. */
  index: number;
  /** The original's bytes [start, end). */
  start: number;
  end: number;
  /** Bytes [0, prefixEnd) (the header row) read before the range, so a helper names the columns as the lead does. */
  prefixEnd: number;
  /** The settings the whole file was read with, so no part guesses its own. */
  format: "csv" | "tsv" | "ndjson";
  delimiter?: string;
  newline?: "\n" | "\r\n";
  /** Temp files a helper writes: its processed rows (bare lines joined by `,\n`) and its rejects. */
  rowsPath: string;
  rejectsPath: string;
}

export interface SplitPlan {
  parts: PartSpec[];
}

/** What a helper reports; rows are numbered from 0 within its range. */
export interface PartResult {
  index: number;
  ok: boolean;
  counts: RunCounts;
  errors: RowError[];
  /** A rejects file was written. */
  rejects: boolean;
  /** Bytes in the rows file. */
  rowsSize: number;
  /** Why it stopped, for the log (the lead reads the file alone then). */
  detail?: string;
}

export interface PlanOptions {
  parts: number;
  minBytes?: number;
  /** Where helpers write their temp files; default the local store's own temp folder, else the OS's. */
  tmpDir?: string;
}

function tempDirFor(store: ObjectStore): string {
  const root = (store as { root?: unknown }).root;
  return typeof root === "string" ? join(root, ".fps", "tmp") : tmpdir();
}

async function readRange(store: ObjectStore, key: string, start: number, end: number): Promise<Uint8Array> {
  const body = await store.get(key, { range: { start, end: end - 1 } });
  if (!body) throw new Error(`${key} is missing`);
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/** End of the header record: after the first line end outside quotes that follows something other than blanks. */
function headerEnd(head: Uint8Array, quote: number, newline: "\n" | "\r\n"): number {
  let quoted = false;
  let content = false;
  for (let i = 0; i < head.length; i++) {
    const c = head[i]!;
    if (c === quote) quoted = !quoted;
    else if (!quoted && c === 10) {
      if (newline === "\r\n" && head[i - 1] !== 13) continue;
      if (content) return i + 1;
    } else if (c !== 32 && c !== 9 && c !== 13) content = true;
  }
  return -1;
}

/** The first record boundary guess at or after `from`: just past the next line end. */
function lineEndAfter(window: Uint8Array, newline: "\n" | "\r\n"): number {
  for (let i = window.indexOf(10); i >= 0; i = window.indexOf(10, i + 1)) {
    if (newline === "\n" || (i > 0 && window[i - 1] === 13)) return i + 1;
  }
  return -1;
}

/**
 * The ranges to read in parallel, or null when the file is read by one
 * worker (too small, not a splittable kind, a header that cannot be found
 * for sure in the first 64 KiB).
 */
export async function planSplit(req: ProcessRequest, store: ObjectStore, opts: PlanOptions): Promise<SplitPlan | null> {
  const o = req.mappings.options;
  if (opts.parts < 2 || req.outputFormat !== "json") return null;
  if (o.headerRow === false || o.skipEmptyLines === false || (o.format !== undefined && o.format !== "csv" && o.format !== "tsv" && o.format !== "ndjson")) return null;
  const quote = o.quote ?? '"';
  if (quote.length !== 1 || quote.charCodeAt(0) > 127) return null;
  const info = await store.stat(req.originalKey);
  if (!info || info.size < (opts.minBytes ?? DEFAULT_MIN_SPLIT_BYTES) || info.size < 2 * HEAD_BYTES) return null;
  const size = info.size;
  const head = await readRange(store, req.originalKey, 0, HEAD_BYTES);
  if (isGzip(head)) return null;

  // The same detection the whole file gets; the batches are never read.
  let format: string;
  let delimiter: string | undefined;
  let newline: string | undefined;
  try {
    const { summary } = await openInput(once(head), parseOptions(req));
    if (summary.gzip || summary.encoding !== "utf-8") return null;
    format = summary.format;
    delimiter = summary.delimiter;
    newline = format === "ndjson" ? "\n" : summary.newline;
  } catch {
    return null;
  }
  if ((format !== "csv" && format !== "tsv" && format !== "ndjson") || (newline !== "\n" && newline !== "\r\n")) return null;

  let prefixEnd = 0;
  if (format !== "ndjson") {
    prefixEnd = headerEnd(head, quote.charCodeAt(0), newline);
    if (prefixEnd < 0) return null;
    // The scan above is simpler than papaparse's rules; papaparse must agree that this is exactly one record.
    const text = new TextDecoder("utf-8", { fatal: false }).decode(head.subarray(0, prefixEnd));
    const check = Papa.parse(text, { delimiter, newline, quoteChar: quote, skipEmptyLines: "greedy" });
    if (check.errors.length > 0 || check.data.length !== 1) return null;
  }

  const dir = opts.tmpDir ?? tempDirFor(store);
  mkdirSync(dir, { recursive: true });
  const tag = `${req.runId}-${randomUUID()}`;
  const cuts: number[] = [0];
  for (let k = 1; k < opts.parts; k++) {
    const share = (LEAD_WEIGHT + k - 1) / (LEAD_WEIGHT + opts.parts - 1);
    const at = Math.max(Math.floor(size * share), prefixEnd, cuts[cuts.length - 1]! + 1);
    if (at >= size) break;
    const window = await readRange(store, req.originalKey, at, Math.min(size, at + CUT_WINDOW));
    const rel = lineEndAfter(window, newline);
    if (rel < 0 || at + rel >= size) break;
    cuts.push(at + rel);
  }
  if (cuts.length < 2) return null;
  cuts.push(size);
  const parts: PartSpec[] = [];
  for (let i = 0; i + 1 < cuts.length; i++) {
    parts.push({
      index: i,
      start: cuts[i]!,
      end: cuts[i + 1]!,
      prefixEnd: i === 0 ? 0 : prefixEnd,
      format,
      delimiter: format === "ndjson" ? undefined : delimiter,
      newline,
      rowsPath: join(dir, `${tag}-${i}.rows`),
      rejectsPath: join(dir, `${tag}-${i}.rejects`),
    });
  }
  return { parts };
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

function partParseOptions(req: ProcessRequest, spec: PartSpec): ParseOptions {
  return { ...parseOptions(req), format: spec.format, delimiter: spec.delimiter, newline: spec.newline, fields: true };
}

async function* rangeBytes(store: ObjectStore, key: string, spec: PartSpec): AsyncGenerator<Uint8Array> {
  const ranges: [number, number][] = spec.prefixEnd > 0 ? [[0, spec.prefixEnd], [spec.start, spec.end]] : [[spec.start, spec.end]];
  for (const [start, end] of ranges) {
    const body = await store.get(key, { range: { start, end: end - 1 } });
    if (!body) throw new Error(`the original ${key} is missing`);
    const reader = body.getReader();
    try {
      yield* chunksOf(reader);
    } finally {
      await reader.cancel().catch(() => {});
    }
  }
}

const zeroCounts = (): RunCounts => ({ total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 });

/** A helper's temp file, created on its first write. */
function tempWriter(path: string) {
  let file: FileWriter | null = null;
  return {
    async write(text: string) {
      file ??= new FileWriter(path, { backgroundSync: false });
      file.text(text);
    },
    get opened() {
      return file !== null;
    },
    get size() {
      return file?.size ?? 0;
    },
    async end() {
      await file?.end();
    },
  };
}

/** A helper's range: read, mapped, validated, and written as bare rows to its temp files. */
export async function processPart(req: ProcessRequest, store: ObjectStore, spec: PartSpec, signal?: AbortSignal): Promise<PartResult> {
  const counts = zeroCounts();
  const errors: RowError[] = [];
  const rows = tempWriter(spec.rowsPath);
  const rejects = tempWriter(spec.rejectsPath);
  let result: PartResult;
  try {
    const { fieldMappings, validations } = req.mappings;
    const mapping = compileMapping({ fieldMappings, schemaProperties: schemaProperties(req.schema.definition) });
    const validator = validatorFor(req.schema);
    const input = await openInput(rangeBytes(store, req.originalKey, spec), partParseOptions(req, spec));
    const stop = await pumpRows(input, {
      mapping,
      validator,
      writer: jsonWriter(),
      rejectWriter: jsonWriter(),
      policy: validations.onInvalidRow ?? "fail",
      maxInvalidRows: validations.maxInvalidRows,
      counts,
      errors,
      signal,
      rows: (t) => rows.write(t),
      rejects: (t) => rejects.write(t),
    });
    await rows.end();
    await rejects.end();
    trace(`${req.runId}: part ${spec.index}: ${counts.total} rows read`);
    result = { index: spec.index, ok: stop === null, counts, errors, rejects: rejects.opened, rowsSize: rows.size, detail: stop ?? undefined };
  } catch (e) {
    await rows.end().catch(() => {});
    await rejects.end().catch(() => {});
    result = { index: spec.index, ok: false, counts, errors, rejects: false, rowsSize: 0, detail: e instanceof Error ? e.message : String(e) };
  }
  if (!result.ok) await removeTemp([spec]);
  return result;
}

export async function removeTemp(parts: readonly PartSpec[]): Promise<void> {
  await Promise.all(parts.flatMap((p) => [rm(p.rowsPath, { force: true }), rm(p.rejectsPath, { force: true })]));
}

async function* fileBytes(path: string): AsyncGenerator<Uint8Array> {
  const fh = await open(path, "r");
  try {
    for (;;) {
      // A fresh buffer each time: the sink's queue keeps the previous ones until the store has them.
      const buf = new Uint8Array(COPY_CHUNK);
      const { bytesRead } = await fh.read(buf, 0, COPY_CHUNK, null);
      if (bytesRead === 0) return;
      yield bytesRead === COPY_CHUNK ? buf : buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

/**
 * A helper's rows file read while the helper still writes it: the lead
 * copies the rows as they come instead of after the helper is done. Ends once `done` has settled and the file is read to its end.
 */
async function* following(path: string, done: Promise<PartResult>, reuse: boolean): AsyncGenerator<Uint8Array> {
  let finished = false;
  void done.then(() => (finished = true));
  const pause = () => Promise.race([done, Bun.sleep(FOLLOW_POLL_MS)]);
  let fh: Awaited<ReturnType<typeof open>> | null = null;
  let buf: Uint8Array | null = null;
  try {
    for (;;) {
      const last = finished;
      if (!fh) {
        fh = await open(path, "r").catch(() => null);
        if (!fh) {
          if (last) return;
          await pause();
          continue;
        }
      }
      // A fresh buffer each time unless the sink copies what it is given: a stream sink's queue keeps the previous ones.
      if (!buf || !reuse) buf = new Uint8Array(COPY_CHUNK);
      const { bytesRead } = await fh.read(buf, 0, COPY_CHUNK, null);
      if (bytesRead > 0) {
        yield bytesRead === COPY_CHUNK ? buf : buf.subarray(0, bytesRead);
        continue;
      }
      // At the end of what is written: done only if the helper had finished before this read began.
      if (last) return;
      await pause();
    }
  } finally {
    await fh?.close();
  }
}

const REJECT_PREFIX = '{"rowIndex":';

/** A helper's rejects (lines `{"rowIndex":n,...}` joined by `,\n`) with each rowIndex moved by `offset`, in pieces. */
async function* renumbered(path: string, offset: number): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let carry = "";
  const fix = (line: string) => {
    if (!line.startsWith(REJECT_PREFIX)) throw new Error("a helper's rejects file is not in the expected layout");
    let i = REJECT_PREFIX.length;
    while (i < line.length && line.charCodeAt(i) >= 48 && line.charCodeAt(i) <= 57) i++;
    return `${REJECT_PREFIX}${Number(line.slice(REJECT_PREFIX.length, i)) + offset}${line.slice(i)}`;
  };
  for await (const chunk of fileBytes(path)) {
    const text = carry + decoder.decode(chunk, { stream: true });
    const lines = text.split("\n");
    carry = lines.pop()!;
    if (lines.length > 0) yield `${lines.map(fix).join("\n")}\n`;
  }
  carry += decoder.decode();
  if (carry) yield fix(carry);
}

/**
 * The lead's side: reads range 0 into the processed file, then appends the
 * helpers' rows in order. Answers null when the parts cannot give the
 * single-worker result (a part stopped, a budget is exceeded, anything
 * unexpected): the caller then reads the whole file alone, which also
 * overwrites or removes whatever was started here.
 */
export async function processSplit(
  req: ProcessRequest,
  store: ObjectStore,
  plan: SplitPlan,
  results: readonly Promise<PartResult>[],
  interrupted: () => boolean,
  signal?: AbortSignal,
): Promise<ProcessOutcome | null> {
  const started = performance.now();
  const counts = zeroCounts();
  const errors: RowError[] = [];
  let processed: Sink | null = null;
  let rejects: Sink | null = null;
  let rejectLines = false;
  const lead = plan.parts[0]!;
  try {
    const { fieldMappings, validations } = req.mappings;
    const policy = validations.onInvalidRow ?? "fail";
    const mapping = compileMapping({ fieldMappings, schemaProperties: schemaProperties(req.schema.definition) });
    const validator = validatorFor(req.schema);
    const input = await openInput(rangeBytes(store, req.originalKey, lead), partParseOptions(req, lead));
    const openRejects = async (): Promise<Sink> => {
      if (!rejects) {
        rejects = openSink(store, req.rejectsKey, "application/json");
        await rejects.write("[\n");
      }
      return rejects;
    };
    processed = openSink(store, req.processedKey, "application/json");
    await processed.write("[\n");
    trace(`${req.runId}: part 0 (lead) starts`);
    const stop = await pumpRows(input, {
      mapping,
      validator,
      writer: jsonWriter(),
      rejectWriter: jsonWriter(),
      policy,
      maxInvalidRows: validations.maxInvalidRows,
      counts,
      errors,
      signal,
      interrupted,
      rows: (t) => processed!.write(t),
      async rejects(t) {
        await (await openRejects()).write(t);
        rejectLines = true;
      },
    });
    if (stop !== null || interrupted()) return await giveUp();

    trace(`${req.runId}: part 0: ${counts.total} rows read`);
    for (let k = 1; k < plan.parts.length; k++) {
      const part = plan.parts[k]!;
      let separated = counts.valid === 0;
      let copied = 0;
      for await (const chunk of following(part.rowsPath, results[k - 1]!, processed.copies)) {
        if (interrupted()) return await giveUp();
        if (!separated) {
          await processed.write(",\n");
          separated = true;
        }
        await processed.writeForeign(chunk);
        copied += chunk.byteLength;
      }
      const r = await results[k - 1]!;
      if (signal?.aborted) throw new Cancelled();
      if (!r.ok || copied !== r.rowsSize) return await giveUp();
      const offset = counts.total;
      for (const e of r.errors) {
        if (errors.length >= MAX_REPORTED_ERRORS) break;
        errors.push({ ...e, rowIndex: e.rowIndex + offset });
      }
      if (r.rejects) {
        const sink = await openRejects();
        if (rejectLines) await sink.write(",\n");
        for await (const text of renumbered(part.rejectsPath, offset)) await sink.write(text);
        rejectLines = true;
      }
      counts.total += r.counts.total;
      counts.valid += r.counts.valid;
      counts.invalid += r.counts.invalid;
      counts.skipped += r.counts.skipped;
      counts.quarantined += r.counts.quarantined;
      await removeTemp([part]);
    }
    // Budgets over the whole file: a run that exceeds one is failed with the message one worker gives.
    const { maxInvalidRows, maxInvalidRatio } = validations;
    if (policy === "fail" && counts.invalid > 0) return await giveUp();
    if (maxInvalidRows !== undefined && counts.invalid > maxInvalidRows) return await giveUp();
    if (maxInvalidRatio !== undefined && counts.total > 0 && counts.invalid / counts.total > maxInvalidRatio) return await giveUp();

    await processed.write(counts.valid > 0 ? "\n]\n" : "]\n");
    trace(`${req.runId}: the helpers' rows copied`);
    const info = await processed.close();
    trace(`${req.runId}: processed file stored`);
    let rejectsInfo: ProcessOutcome["rejects"] = null;
    if (rejects) {
      const sink: Sink = rejects;
      await sink.write("\n]\n");
      const r = await sink.close();
      rejectsInfo = { key: req.rejectsKey, size: r.size, rows: counts.quarantined };
    } else {
      await store.delete(req.rejectsKey);
    }
    const summary = input.summary;
    return {
      ok: true,
      counts,
      errors,
      input: { format: summary.format, encoding: summary.encoding, gzip: summary.gzip },
      processed: { key: req.processedKey, size: info.size, rows: counts.valid, format: "json", mimetype: "application/json" },
      rejects: rejectsInfo,
      processMs: Math.round(performance.now() - started),
    };
  } catch (e) {
    if (e instanceof Cancelled) throw e;
    return await giveUp();
  } finally {
    await removeTemp(plan.parts);
  }

  async function giveUp(): Promise<null> {
    const reason = new Error("the file is read again by one worker");
    const r = rejects as Sink | null;
    await Promise.all([processed?.abort(reason), r?.abort(reason)]);
    return null;
  }
}
