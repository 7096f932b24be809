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

/** One invalid row, as reported in metadata and rejects files. `rowIndex` is 0-based over the data rows. */
export interface RowError {
  rowIndex: number;
  field: string;
  message: string;
}

export interface RunCounts {
  /** Data rows read from the file (header excluded). */
  total: number;
  valid: number;
  invalid: number;
  /** Invalid rows left out of the processed file (onInvalidRow skip or quarantine). */
  skipped: number;
  /** Invalid rows written to the rejects file (onInvalidRow quarantine). */
  quarantined: number;
}

export interface RunMetadata {
  rows?: RunCounts;
  /** The first invalid rows' errors (at most 20). */
  errors?: RowError[];
  /** Input format as read (csv, tsv, xlsx, json, ndjson, xml), encoding, and whether it was gzipped. */
  input?: { format: string; encoding?: string; gzip?: boolean; pgp?: { signatureVerified: boolean } };
  output?: { format: string; size: number; rows: number };
  /** `whileArriving`: processing began while the file was still being received (docs/decisions/engine.md). */
  timings?: { queuedMs?: number; processMs?: number; totalMs?: number; whileArriving?: boolean };
  [extra: string]: unknown;
}
