import type { RowError, RunCounts, RunMetadata } from "../domain/runs";
import type { PipelineMappings } from "../domain/mappings";
import type { StorageConfig, WriteObserver } from "../adapters/storage/port";
import type { FixedWidthSpec } from "./parse/fixed";
import type { PgpKeys } from "./parse/pgp";

/**
 * The engine's contract: bytes in, records out, mapped, validated, written.
 * Pure and streaming: nothing here touches the database; the worker thread
 * (src/engine/worker.ts) reads and writes through the object store.
 */
export const INPUT_FORMATS = ["csv", "tsv", "xlsx", "json", "ndjson", "xml", "fixed"] as const;
export type InputFormat = (typeof INPUT_FORMATS)[number];
export type OutputFormat = "json" | "csv" | "xml";

/** One record as read: column name -> value (text for CSV/TSV/XLSX, any JSON value for JSON/NDJSON/XML). */
export type SourceRecord = Record<string, unknown>;

export interface ParseLimits {
  /** Largest single record (a CSV line, an NDJSON line, a JSON/XML record, a workbook cell or shared string) in bytes. */
  maxRecordBytes: number;
  /** Most columns a record may have. */
  maxColumns: number;
  /** Deepest nesting of JSON arrays and objects, or of XML elements. */
  maxDepth: number;
  /** Most shared strings an XLSX workbook may declare (exceljs holds them all in memory). */
  maxSharedStrings: number;
  /** Largest shared-strings part of an XLSX workbook, inflated, in bytes. */
  maxSharedStringsBytes: number;
  /** Most bytes a compressed input (gzip, the entries of a zip or workbook) may inflate to (MAX_DECOMPRESSED_BYTES). */
  maxDecompressedBytes: number;
  /** Most bytes inflated per compressed byte read (MAX_DECOMPRESSION_RATIO), checked past RATIO_FLOOR_BYTES. */
  maxDecompressionRatio: number;
}

export const DEFAULT_LIMITS: ParseLimits = {
  maxRecordBytes: 16 * 1024 * 1024,
  maxColumns: 5000,
  maxDepth: 1000,
  maxSharedStrings: 2_000_000,
  maxSharedStringsBytes: 256 * 1024 * 1024,
  maxDecompressedBytes: 5 * 1024 ** 3,
  maxDecompressionRatio: 100,
};

/** A compressed input may inflate this far before its ratio is judged: a small file of blanks legitimately compresses a thousandfold. */
export const RATIO_FLOOR_BYTES = 4 * 1024 * 1024;

export interface ParseOptions {
  /** The file's name, for format and gzip detection by extension. */
  filename: string;
  /** From mappings.options; detected from the extension and the content when absent. */
  format?: InputFormat;
  delimiter?: string;
  quote?: string;
  headerRow?: boolean;
  skipEmptyLines?: boolean;
  encoding?: "utf-8" | "utf-16le" | "latin1" | "windows-1252";
  /** JSON/XML: dotted path to the repeated record. */
  recordPath?: string;
  /** XLSX: the sheet to read (default the first). */
  sheet?: string;
  /** OpenPGP input: the connection's keys, when it has a private key. */
  pgp?: PgpKeys;
  /** Fixed-width text: the layout (required with format "fixed"). */
  fixedWidth?: FixedWidthSpec;
  /** CSV/TSV line ending, given together with `delimiter` (a file read in parts, src/engine/split.ts); detected when absent. */
  newline?: "\n" | "\r\n" | "\r";
  limits?: Partial<ParseLimits>;
  /** CSV/TSV: also offer the records as field arrays (ParsedInput.fieldBatches), which the engine maps without building an object per record. */
  fields?: boolean;
}

/** A CSV/TSV record as its fields in header order (extra fields after them), as the parser gives it. */
export type FieldRow = readonly unknown[];

/** What names the fields of FieldRows: the header, and the record a row stands for. */
export interface FieldNames {
  /** Column names in header order; set once the header is read (before the first batch). */
  columns(): readonly string[];
  /** The record `batches` would have given for `row` (ragged rows are counted once, by the parser). */
  record(row: FieldRow): SourceRecord;
}

/** What the parser found out about the input, once it is read. */
export interface ParseSummary {
  format: InputFormat;
  encoding?: string;
  gzip: boolean;
  /** The input was an OpenPGP message, decrypted (and its signature checked when the connection has the partner's key). */
  pgp?: { signatureVerified: boolean };
  /** Column names in file order (CSV/TSV/XLSX header; first-seen keys otherwise). */
  columns: string[];
}

/**
 * An input the engine cannot read: malformed, too large a record, empty.
 * The message is for a person and says what to fix; the run fails with it.
 */
export class EngineInputError extends Error {
  override readonly name = "EngineInputError";
}

/** A quoted field still open where the input ends: in a stripe (src/engine/split.ts), the stripe's end was cut inside that field. */
export class UnclosedQuoteError extends EngineInputError {}

export interface SchemaRef {
  id: string;
  /** Changes whenever the definition changes (e.g. updatedAt as ISO text); the compiled validator is cached by id + version. */
  version: string;
  definition: Record<string, unknown>;
}

/** One job for the engine: read the original, write the processed file (and rejects), report. */
export interface ProcessRequest {
  runId: string;
  filename: string;
  storage: StorageConfig;
  originalKey: string;
  processedKey: string;
  rejectsKey: string;
  outputFormat: OutputFormat;
  mappings: PipelineMappings;
  schema: SchemaRef;
  /** Settings-derived parse limits (MAX_DECOMPRESSED_BYTES, ...); the pool fills them from its options. */
  limits?: Partial<ParseLimits>;
  /** The connection's OpenPGP keys (set when it has pgpPrivateKey): an OpenPGP input is decrypted with them. */
  pgp?: PgpKeys;
  /** The original's size in bytes, when the caller knows it (the runs service always does): without it, or under `minSplitBytes`, one worker reads the file. */
  size?: number;
}

/** Smaller originals are read by one worker: the parts' set-up and the copy would cost more than they save (src/engine/split.ts). */
export const DEFAULT_MIN_SPLIT_BYTES = 8 * 1024 * 1024;

export interface ProcessOutcome {
  /** false: the run fails with `errorMessage` (and nothing is left at processedKey). */
  ok: boolean;
  errorMessage?: string;
  counts: RunCounts;
  /** The first invalid rows (at most 20). */
  errors: RowError[];
  input?: RunMetadata["input"];
  processed: { key: string; size: number; rows: number; format: OutputFormat; mimetype: string } | null;
  rejects: { key: string; size: number; rows: number } | null;
  processMs: number;
  /** Processing began while the file was still arriving (EnginePool.speculate). */
  streamed?: boolean;
  /** For the service log, not for people: the stack of an unexpected failure. */
  internalError?: string;
  /**
   * Why the run failed, for whoever decides on a retry: `input` (the file:
   * malformed, over a limit, nested too deep; no retry can fix it) or
   * `internal` (a worker died, storage failed; a retry may succeed). Set
   * whenever `ok` is false.
   */
  failure?: "input" | "internal";
}

/** The outcome of a run the engine could not process for a reason of its own (a worker died, storage failed): nothing counted, nothing written; a retry may succeed. */
export function failedOutcome(errorMessage: string, internalError?: string): ProcessOutcome {
  return {
    ok: false,
    errorMessage,
    internalError,
    failure: "internal",
    counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 },
    errors: [],
    processed: null,
    rejects: null,
    processMs: 0,
  };
}

/** Work begun on a file while it arrives (EnginePool.speculate). */
export interface Speculation {
  /** For the store's putArriving: the pool follows the bytes as they are written. */
  readonly observe: WriteObserver;
  /** The file will not be the run's original after all (its write or the run's creation failed): drop what was done. */
  cancel(reason: Error): void;
}

/**
 * Live counters of one file's processing, in shared memory so that worker
 * threads write them with a plain store per batch and the caller reads
 * them on a timer: [PROGRESS_ROWS] rows read, [PROGRESS_BYTES] bytes of the
 * original read. Approximate while it runs; the outcome has the exact counts.
 */
export type EngineProgress = Float64Array<SharedArrayBuffer>;
export const PROGRESS_ROWS = 0;
export const PROGRESS_BYTES = 1;
export const newEngineProgress = (): EngineProgress => new Float64Array(new SharedArrayBuffer(16));

/** Runs ProcessRequests on Bun Worker threads so the HTTP server never waits on a file. */
export interface EnginePool {
  /** `progress`: counters the engine keeps up to date while it works (rows and bytes read so far). */
  process(req: ProcessRequest, signal?: AbortSignal, progress?: EngineProgress): Promise<ProcessOutcome>;
  /**
   * A file is arriving that will be the original of `req`'s run: the pool
   * may start on it while it arrives, and `process` of the same request then
   * takes that work (docs/decisions/engine.md, "Processing while a file
   * arrives"). null when it will not (busy, not a file it reads in stripes,
   * not on the local store, or larger than it takes on that way:
   * `expectedBytes` is what the sender announced).
   */
  speculate?(req: ProcessRequest, expectedBytes: number): Speculation | null;
  /**
   * A file is arriving: start the worker threads that are not running yet, so
   * that they have loaded by the time its run is processed (only the first
   * file after a start finds none).
   */
  warm?(): void;
  close(): Promise<void>;
}
