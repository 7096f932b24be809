import { readSync } from "node:fs";
import Papa from "papaparse";
import type { ObjectStore } from "../adapters/storage/port";
import type { RowError, RunCounts } from "../domain/runs";
import { compileMapping, schemaProperties } from "./map";
import { openInput } from "./parse";
import { isGzip } from "./parse/bytes";
import { chunksOf, parseOptions, pumpRows } from "./process";
import { HEAD_BYTES, type SplitPlan, type StripeResult, type StripeSource, type StripeTask } from "./stripe-plan";
import { type ParseOptions, type ProcessRequest, UnclosedQuoteError } from "./types";
import { validatorFor } from "./validate";
import { jsonWriter } from "./write";

/**
 * The worker's side of one file on several threads (docs/decisions/engine.md,
 * "One file on both workers"): `planSplit` decides from the file's first
 * bytes whether and how it may be cut, and `processStripe` maps, validates
 * and renders one stripe (a byte range cut at a line end) into buffers that
 * go back to the coordinator (src/engine/stripes.ts, on the service's main
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
  if (head.length === 0 || isGzip(head)) return null;

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
export async function readHead(req: ProcessRequest, store: ObjectStore, source: StripeSource, size: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of sourceBytes(req, store, source, 0, Math.min(size, HEAD_BYTES))) parts.push(c);
  return parts.length === 1 ? parts[0]! : new Uint8Array(Buffer.concat(parts));
}

async function* stripeBytes(req: ProcessRequest, store: ObjectStore, task: StripeTask): AsyncGenerator<Uint8Array> {
  // The header record first, so the stripe names its columns as the file does.
  if (task.plan.prefixEnd > 0) yield* sourceBytes(req, store, task.source, 0, task.plan.prefixEnd);
  yield* sourceBytes(req, store, task.source, task.start, task.end);
}

const ENCODER = new TextEncoder();
/** Bytes per output buffer handed to the coordinator. */
const CHUNK_BYTES = 512 * 1024;

/**
 * A stripe's rows encoded into buffers that are transferred to the
 * coordinator (not copied); it hands written ones back as `spare` for the
 * next stripe, so a run allocates a few dozen buffers, not one per chunk.
 */
class ChunkEncoder {
  readonly buffers: ArrayBuffer[] = [];
  readonly lengths: number[] = [];
  size = 0;
  private cur: Uint8Array | null = null;
  private pos = 0;

  constructor(private readonly spare: ArrayBuffer[]) {}

  text(s: string): void {
    let rest = s;
    for (;;) {
      if (!this.cur || this.pos === this.cur.byteLength) this.next();
      const { read, written } = ENCODER.encodeInto(rest, this.cur!.subarray(this.pos));
      this.pos += written;
      this.size += written;
      if (read === rest.length) return;
      // Full (a character never splits: encodeInto stops before one that does not fit).
      this.seal();
      rest = rest.slice(read);
    }
  }

  private next(): void {
    if (this.cur) this.seal();
    const buf = this.spare.pop() ?? new ArrayBuffer(CHUNK_BYTES);
    this.cur = new Uint8Array(buf);
    this.pos = 0;
  }

  private seal(): void {
    if (!this.cur) return;
    if (this.pos > 0) {
      this.buffers.push(this.cur.buffer as ArrayBuffer);
      this.lengths.push(this.pos);
    } else this.spare.push(this.cur.buffer as ArrayBuffer);
    this.cur = null;
    this.pos = 0;
  }

  finish(): void {
    this.seal();
  }
}

const zeroCounts = (): RunCounts => ({ total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 });

/**
 * One stripe: its rows read (after the header record), mapped, validated
 * and rendered as bare processed lines joined by `,\n`, rejects as lines
 * `{"rowIndex":n,...}` with n counted from 0 in this stripe. `ok: false`
 * when the stripe cannot stand for its part of the single-worker result: a
 * policy stopped it (`fail`, a `maxInvalidRows` budget), or it could not be
 * parsed (including a cut inside a quoted field, which shows as a quote
 * never closed at the stripe's end). Never throws.
 */
export async function processStripe(req: ProcessRequest, store: ObjectStore, task: StripeTask, spare: ArrayBuffer[] = []): Promise<StripeResult> {
  const counts = zeroCounts();
  const errors: RowError[] = [];
  const out = new ChunkEncoder(spare);
  let rejects = "";
  try {
    const { fieldMappings, validations } = req.mappings;
    const mapping = compileMapping({ fieldMappings, schemaProperties: schemaProperties(req.schema.definition) });
    const validator = validatorFor(req.schema);
    const input = await openInput(stripeBytes(req, store, task), stripeParseOptions(req, task.plan));
    const stop = await pumpRows(input, {
      mapping,
      validator,
      writer: jsonWriter(),
      rejectWriter: jsonWriter(),
      policy: validations.onInvalidRow ?? "fail",
      maxInvalidRows: validations.maxInvalidRows,
      counts,
      errors,
      async rows(t) {
        out.text(t);
      },
      async rejects(t) {
        rejects += t;
      },
    });
    out.finish();
    const summary = input.summary;
    // A stopped stripe's rows are never written: its buffers stay here for the next one.
    if (stop !== null) spare.push(...out.buffers.splice(0));
    return {
      index: task.index,
      ok: stop === null,
      counts,
      errors,
      rejects,
      buffers: out.buffers,
      lengths: stop === null ? out.lengths : [],
      size: stop === null ? out.size : 0,
      input: { format: summary.format, encoding: summary.encoding, gzip: summary.gzip },
      detail: stop ?? undefined,
    };
  } catch (e) {
    out.finish();
    spare.push(...out.buffers.splice(0));
    const detail = e instanceof Error ? e.message : String(e);
    return { index: task.index, ok: false, openAtEnd: e instanceof UnclosedQuoteError, counts, errors, rejects: "", buffers: [], lengths: [], size: 0, detail };
  }
}

