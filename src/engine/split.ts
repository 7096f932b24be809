import { isUtf8 } from "node:buffer";
import { readSync } from "node:fs";
import Papa from "papaparse";
import type { ObjectStore } from "../adapters/storage/port";
import type { RowError, RunCounts } from "../domain/runs";
import type { FieldMapping } from "../domain/mappings";
import { openInput } from "./parse";
import { isGzip } from "./parse/bytes";
import { type HeaderSummary, hasHeader, headerPlanFor, mappingFor } from "./header";
import { isPgpInput } from "./parse/pgp";
import { chunksOf, parseOptions, pumpRows } from "./process";
import { HEAD_BYTES, type SplitPlan, type StripeResult, type StripeSource, type StripeTask } from "./stripe-plan";
import { type ParseOptions, type ProcessRequest, UnclosedQuoteError } from "./types";
import { validatorFor } from "./validate";
import { nativePlan, rowLoop } from "./native/rowloop";
import { nativeRows } from "./native/stripe";
import { jsonWriter } from "./write";
import { ChunkEncoder } from "./write/chunks";

/**
 * The worker's side of one file on several threads (docs/decisions/engine.md,
 * "One file on both workers"): `planSplit` decides from the file's first
 * bytes whether and how it may be cut, and `processStripe` maps, validates
 * and renders one stripe (a byte range cut at a line end) into buffers that
 * go back to the coordinator (src/engine/stripes, on the service's main
 * thread), which writes the stripes in order. Nothing here writes a file.
 */

export type { SplitPlan, StripeResult, StripeSource, StripeTask } from "./stripe-plan";

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

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * How a file may be read in stripes, from its first bytes (`head`: the
 * first HEAD_BYTES, or the whole file if shorter), or null when it is read
 * by one worker: not CSV, TSV or NDJSON, gzip, not UTF-8, JSON output not
 * asked for, no header row, blank lines kept, an unusual quote, or a header
 * that cannot be found for sure in `head`. The caller decides on the size.
 */
export async function planSplit(req: ProcessRequest, head: Uint8Array): Promise<SplitPlan | null> {
  const o = req.mappings.options;
  if (req.outputFormat !== "json") return null;
  if (o.headerRow === false || o.skipEmptyLines === false || (o.format !== undefined && o.format !== "csv" && o.format !== "tsv" && o.format !== "ndjson")) return null;
  const quote = o.quote ?? '"';
  if (quote.length !== 1 || quote.charCodeAt(0) > 127) return null;
  if (head.length === 0 || isGzip(head) || isPgpInput(head, req.filename)) return null;

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
  return { format, delimiter: format === "ndjson" ? undefined : delimiter, newline, prefixEnd };
}

function stripeParseOptions(req: ProcessRequest, plan: SplitPlan): ParseOptions {
  return { ...parseOptions(req), format: plan.format, delimiter: plan.delimiter, newline: plan.newline, fields: true };
}

/** Bytes [start, end) of the original, from the store or from an open file of this process (an upload still arriving). */
async function* sourceBytes(req: ProcessRequest, store: ObjectStore, source: StripeSource, start: number, end: number): AsyncGenerator<Uint8Array> {
  if (end <= start) return;
  if (source.kind === "fd") {
    for (let pos = start; pos < end; ) {
      // A fresh buffer per read: the parser's reader may hold the previous one.
      const buf = new Uint8Array(Math.min(READ_CHUNK, end - pos));
      const n = readSync(source.fd, buf, 0, buf.byteLength, pos);
      if (n === 0) throw new Error(`the original ended at byte ${pos}, before the ${end} bytes it was to have`);
      pos += n;
      yield n === buf.byteLength ? buf : buf.subarray(0, n);
    }
    return;
  }
  const body = await store.get(req.originalKey, { range: { start, end: end - 1 } });
  if (!body) throw new Error(`the original ${req.originalKey} is missing`);
  const reader = body.getReader();
  try {
    yield* chunksOf(reader);
  } finally {
    await reader.cancel().catch(() => {});
  }
}

const READ_CHUNK = 256 * 1024;

/** The first bytes of the original, for planSplit. */
export function readHead(req: ProcessRequest, store: ObjectStore, source: StripeSource, size: number): Promise<Uint8Array> {
  return readBytes(req, store, source, 0, Math.min(size, HEAD_BYTES));
}

/** Bytes [start, end) of the original in one new buffer (the head, or a stored stripe: a few MiB). */
async function readBytes(req: ProcessRequest, store: ObjectStore, source: StripeSource, start: number, end: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of sourceBytes(req, store, source, start, end)) parts.push(c);
  return parts.length === 1 ? parts[0]! : new Uint8Array(Buffer.concat(parts));
}

async function* stripeBytes(req: ProcessRequest, store: ObjectStore, task: StripeTask): AsyncGenerator<Uint8Array> {
  // The header record first, so the stripe names its columns as the file does.
  if (task.plan.prefixEnd > 0) yield* sourceBytes(req, store, task.source, 0, task.plan.prefixEnd);
  yield* sourceBytes(req, store, task.source, task.start, task.end);
}

const zeroCounts = (): RunCounts => ({ total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 });

/**
 * One stripe: its rows read (after the header record), mapped, validated
 * and rendered as bare processed lines joined by `,\n`, rejects as lines
 * `{"inputRow":n,...}` with n counted from 1 in this stripe. `ok: false`
 * when the stripe cannot stand for its part of the single-worker result: a
 * policy stopped it (`fail`, a `maxInvalidRows` budget), or it could not be
 * parsed (including a cut inside a quoted field, which shows as a quote
 * never closed at the stripe's end). Never throws.
 *
 * CSV and TSV rows go through the native row loop when it is built and the
 * pipeline's mapping and schema are within what it applies exactly
 * (src/engine/native/); the JavaScript reader takes the stripe from wherever
 * that loop stops short of its end, and every stripe it cannot take.
 */
export async function processStripe(req: ProcessRequest, store: ObjectStore, task: StripeTask, spare: ArrayBuffer[] = []): Promise<StripeResult> {
  const counts = zeroCounts();
  const errors: RowError[] = [];
  const out = new ChunkEncoder(spare);
  let rejects = "";
  const stopped = (detail: string, openAtEnd?: boolean): StripeResult => {
    out.finish();
    // A stopped stripe's rows are never written: its buffers stay here for the next one.
    spare.push(...out.buffers.splice(0));
    return { index: task.index, ok: false, openAtEnd, counts, errors, rejects: "", buffers: [], lengths: [], size: 0, detail };
  };
  try {
    const { validations } = req.mappings;
    let fieldMappings: readonly FieldMapping[] = req.mappings.fieldMappings;
    // CSV/TSV: the header diagnosis first (the same for every stripe); its mapping names columns as the header spells them.
    const header = task.plan.format === "ndjson" ? null : await headerOf(req, store, task);
    let headerSummary: HeaderSummary | undefined;
    if (header && hasHeader(req, task.plan.format)) {
      const planned = headerPlanFor(req, header.columns);
      if (planned.problem !== null) return stopped(planned.problem);
      fieldMappings = planned.fieldMappings;
      headerSummary = planned.summary;
    }
    const mapping = mappingFor(req, fieldMappings);
    const validator = validatorFor(req.schema);
    const policy = validations.onInvalidRow ?? "fail";
    const rejectWriter = jsonWriter();
    const addRejects = (t: string) => {
      rejects += t;
    };
    let start = task.start;
    let wrote = false;
    let input: StripeResult["input"];

    const loop = header ? rowLoop() : null;
    if (loop && header) {
      const columns = header.columns;
      const quote = req.mappings.options.quote ?? '"';
      const plan = nativePlan({
        fieldMappings,
        schema: req.schema.definition,
        columns,
        delimiter: task.plan.delimiter!,
        quote,
        newline: task.plan.newline,
        emptyCells: req.mappings.options.emptyCells,
      });
      const stored = plan && task.source.kind === "store" ? await readBytes(req, store, task.source, task.start, task.end) : null;
      // From here to the end of nativeRows nothing awaits: the file's bytes stay in `scratch` until it is done.
      const bytes = plan && task.source.kind === "fd" ? readFdRange(task.source.fd, task.start, task.end) : stored;
      // Text that is not UTF-8 fails the file: the JavaScript reader says where.
      if (plan && bytes && isUtf8(bytes)) {
        input = header.input;
        const run = { loop, plan, bytes, columns, quote, mapping, validator, policy, maxInvalidRows: validations.maxInvalidRows, counts, errors, rejectWriter, rejects: addRejects, out, wrote };
        const end = nativeRows(run);
        if (end.stop !== null) return stopped(end.stop);
        start = task.start + end.rest;
        wrote = run.wrote;
      }
    }

    if (start < task.end) {
      const rest = await openInput(stripeBytes(req, store, { ...task, start }), stripeParseOptions(req, task.plan));
      input = { format: rest.summary.format, encoding: rest.summary.encoding, gzip: rest.summary.gzip };
      const stop = await pumpRows(rest, {
        mapping,
        validator,
        writer: jsonWriter(),
        rejectWriter,
        policy,
        maxInvalidRows: validations.maxInvalidRows,
        counts,
        errors,
        async rows(t) {
          if (wrote) out.text(",\n");
          wrote = false;
          out.text(t);
        },
        async rejects(t) {
          addRejects(t);
        },
      });
      if (stop !== null) return stopped(stop);
    }
    out.finish();
    if (input && headerSummary) input = { ...input, header: headerSummary };
    return { index: task.index, ok: true, counts, errors, rejects, buffers: out.buffers, lengths: out.lengths, size: out.size, input };
  } catch (e) {
    return stopped(e instanceof Error ? e.message : String(e), e instanceof UnclosedQuoteError);
  }
}

interface Header {
  columns: readonly string[];
  input: StripeResult["input"];
}
/** The header record of the files this thread reads in stripes, by original and plan: read once a file, not once a stripe. */
const headers = new Map<string, Header>();

/** The file's columns as the JavaScript reader names them (the stripe's header record read by it), and what it found. */
async function headerOf(req: ProcessRequest, store: ObjectStore, task: StripeTask): Promise<Header> {
  const key = JSON.stringify([req.storage, req.originalKey, task.plan]);
  const hit = headers.get(key);
  if (hit) return hit;
  const read = await openInput(sourceBytes(req, store, task.source, 0, task.plan.prefixEnd), stripeParseOptions(req, task.plan));
  for await (const _ of read.fieldBatches!);
  const header: Header = { columns: read.fields!.columns(), input: { format: read.summary.format, encoding: read.summary.encoding, gzip: read.summary.gzip } };
  if (headers.size >= 8) headers.delete(headers.keys().next().value!);
  headers.set(key, header);
  return header;
}

/**
 * The buffer a stripe's bytes are read into from a file, reused: it is read
 * synchronously and the native loop is done with it before anything else
 * runs on this thread (stripes in one thread may interleave at awaits).
 */
let scratch = new Uint8Array(0);
/** Larger ranges (stripes merged after a cut inside a quoted field) get a buffer of their own, so a thread never keeps one. */
const MAX_SCRATCH = 8 * 1024 * 1024;

function readFdRange(fd: number, start: number, end: number): Uint8Array {
  const size = end - start;
  if (scratch.byteLength < size && size <= MAX_SCRATCH) scratch = new Uint8Array(size);
  const buf = size <= MAX_SCRATCH ? scratch.subarray(0, size) : new Uint8Array(size);
  for (let got = 0; got < buf.byteLength; ) {
    const n = readSync(fd, buf, got, buf.byteLength - got, start + got);
    if (n === 0) throw new Error(`the original ended at byte ${start + got}, before the ${end} bytes it was to have`);
    got += n;
  }
  return buf;
}

