/**
 * A writer turns batches of rows into text chunks of one output format. It
 * holds no rows: each call returns the text for what it was given, so a file
 * of any size is written with the memory of one batch.
 */
export interface RowWriter {
  readonly format: "json" | "csv" | "xml";
  readonly contentType: string;
  /** Text before the first row. */
  begin(): string;
  /** Text for `rows[0..count)` (count defaults to rows.length). */
  rows(rows: readonly Record<string, unknown>[], count?: number): string;
  /** Text after the last row. */
  end(): string;
}
