/**
 * Pipeline-run vocabulary shared by the engine, the services, the queue's
 * handlers and the database schema (which stores RunMetadata as JSON).
 */
export const RUN_STATUSES = ["pending", "processing", "completed", "delivered", "failed", "acknowledged"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Statuses after which nothing more happens to a run by itself. */
export const FINAL_STATUSES: readonly RunStatus[] = ["completed", "delivered", "failed", "acknowledged"];

export const RUN_SOURCES = ["upload", "sftp", "email", "outbound"] as const;
export type RunSource = (typeof RUN_SOURCES)[number];

/**
 * One invalid row's error, as reported in metadata and rejects files.
 * `inputRow` is the row's number in the input, counted from 1 over the data
 * rows: the header is not counted, nor are blank lines the reader skips
 * (docs/decisions/rows.md).
 */
export interface RowError {
  inputRow: number;
  field: string;
  message: string;
}

export interface RunCounts {
  /** Data rows read from the file (header excluded). */
  total: number;
  valid: number;
  invalid: number;
  /** Invalid rows left out under onInvalidRow 'skip' (listed in the rejects file). */
  skipped: number;
  /** Invalid rows kept apart under onInvalidRow 'quarantine' (listed in the rejects file). A row is skipped or quarantined, never both. */
  quarantined: number;
}

/** What a run's metadata says of a file's header row (`metadata.input.header`; docs/decisions/mappings.md). */
export interface HeaderSummary {
  /** Header columns no mapping reads, in header order. */
  unusedColumns: string[];
  /** Mapped sources the header lacks (only when mappings.options.missingColumns is 'proceed': otherwise the run fails). */
  missingColumns?: string[];
  /** Sources found under another spelling (headerMatch case-insensitive or normalized): source -> header name. */
  matchedColumns?: Record<string, string>;
}

export interface RunMetadata {
  rows?: RunCounts;
  /** The first invalid rows' errors (at most 20). */
  errors?: RowError[];
  /** Input format as read (csv, tsv, xlsx, json, ndjson, xml), encoding, and whether it was gzipped. */
  input?: { format: string; encoding?: string; gzip?: boolean; header?: HeaderSummary; pgp?: { signatureVerified: boolean } };
  output?: { format: string; size: number; rows: number };
  /** `whileArriving`: processing began while the file was still being received (docs/decisions/engine.md). */
  timings?: { queuedMs?: number; processMs?: number; totalMs?: number; whileArriving?: boolean };
  [extra: string]: unknown;
}
