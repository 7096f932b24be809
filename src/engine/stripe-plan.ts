import type { RowError, RunCounts, RunMetadata } from "../domain/runs";
import type { ProcessRequest } from "./types";

/**
 * What the worker threads and the coordinator of a striped run share
 * (src/engine/split.ts, src/engine/stripes). Types and byte scanning
 * only: the service's main thread imports this, never the parsers.
 */

/** Bytes looked at for the format and the header (as openInput does). */
export const HEAD_BYTES = 64 * 1024;

/** How a file is read in stripes: the settings the whole file was read with, so no stripe guesses its own. */
export interface SplitPlan {
  format: "csv" | "tsv" | "ndjson";
  delimiter?: string;
  newline: "\n" | "\r\n";
  /** Bytes [0, prefixEnd): the header record (and any blank lines before it), read before each stripe's range; 0 for NDJSON. */
  prefixEnd: number;
}

/** Where a stripe's bytes come from: the stored original, or a file this process has open (an upload still arriving). */
export type StripeSource = { kind: "store" } | { kind: "fd"; fd: number };

export interface StripeTask {
  /** 0-based; stripe 0 starts right after the header record. */
  index: number;
  /** The original's bytes [start, end). */
  start: number;
  end: number;
  plan: SplitPlan;
  source: StripeSource;
}

/** A stripe's outcome; rows are numbered from 0 within the stripe. */
export interface StripeResult {
  index: number;
  ok: boolean;
  counts: RunCounts;
  /** The stripe's first errors (at most as many as a run reports). */
  errors: RowError[];
  /** Skipped and quarantined rows: lines `{"inputRow":n,...}` joined by `,\n`; "" when none. */
  rejects: string;
  /** The processed rows, bare lines joined by `,\n`: `lengths[i]` bytes of `buffers[i]`, in order. Transferred, not copied. */
  buffers: ArrayBuffer[];
  lengths: number[];
  size: number;
  input?: RunMetadata["input"];
  /** Not ok because a quoted field is still open at the stripe's end: if the stripe's start is a record boundary, its end was cut inside that field. */
  openAtEnd?: boolean;
  /** Why it stopped (for the log; the file is then read by one worker). */
  detail?: string;
}


/**
 * Where to cut in `window` (bytes from somewhere inside a file): just past a
 * line end that is very likely a record boundary, or -1 if the window holds
 * no line end. With a quote character, the first line end whose line before
 * and line after (both whole in the window) each hold an even number of
 * quotes: a line with an odd number opens or closes a quoted field that
 * spans lines, so the line ends around it are avoided. Without such a line
 * end, the first one. A guess either way: the stripe before a cut proves it
 * (src/engine/stripes).
 */
export function cutIn(window: Uint8Array, newline: "\n" | "\r\n", quote: number | null): number {
  const ends: number[] = [];
  for (let i = window.indexOf(10); i >= 0; i = window.indexOf(10, i + 1)) {
    if (newline === "\r\n" && !(i > 0 && window[i - 1] === 13)) continue;
    ends.push(i);
    if (quote === null) return i + 1;
    if (ends.length >= 3) {
      const [p, n, m] = ends.slice(-3) as [number, number, number];
      if (evenQuotes(window, p + 1, n, quote) && evenQuotes(window, n + 1, m, quote)) return n + 1;
    }
  }
  return ends.length > 0 ? ends[0]! + 1 : -1;
}

function evenQuotes(b: Uint8Array, from: number, to: number, quote: number): boolean {
  let n = 0;
  for (let i = b.indexOf(quote, from); i >= 0 && i < to; i = b.indexOf(quote, i + 1)) n++;
  return n % 2 === 0;
}

/** Names the engine reads only whole (workbooks, JSON and XML documents, gzip). */
const WHOLE_ONLY = /\.(xlsx|xls|json|xml|gz|gzip|zip|pgp|gpg|asc)$/i;

/** Whether a file may be striped, by its request alone (the first bytes decide the rest, in split.ts). */
export function mayStripe(req: ProcessRequest): boolean {
  const o = req.mappings.options;
  if (req.outputFormat !== "json" || o.headerRow === false || o.skipEmptyLines === false) return false;
  if (o.format !== undefined) return o.format === "csv" || o.format === "tsv" || o.format === "ndjson";
  return !WHOLE_ONLY.test(req.filename);
}
