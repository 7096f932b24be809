import { DEFAULT_LIMITS, EngineInputError, type FieldNames, type FieldRow, type InputFormat, type ParseLimits, type ParseOptions, type ParseSummary, type SourceRecord } from "../types";
import { parseDelimited, sniffDelimited } from "./csv";
import { checkNotBinary, formatFromName, isZip, looksLikeNdjson, sniffFormat } from "./detect";
import { plainBytes } from "./layers";
import { withoutPgpExtension } from "./pgp";
import { RecordBuilder, RowNotes } from "./records";
import { chooseEncoding, decodeSample, decodeText, loadDecoder } from "./text";

/** What openInput found, plus what the parsers note while reading (rows kept although they do not fit the header). */
export interface InputSummary extends ParseSummary {
  /** Rows with more or fewer fields than the header (kept; see docs/decisions/parsing.md). */
  raggedRows: number;
  /** The first few notes about such rows, for the run's metadata. */
  warnings: string[];
  /** CSV/TSV: the delimiter and line ending in use (given or detected). */
  delimiter?: string;
  newline?: "\n" | "\r\n" | "\r";
}

export interface ParsedInput {
  /** format, gzip and encoding are set when openInput resolves; columns once the first batch is out. */
  summary: InputSummary;
  /** Records in file order, a few thousand per batch; bytes are read from the source only as batches are taken. */
  batches: AsyncIterable<SourceRecord[]>;
  /**
   * CSV/TSV opened with `fields: true`: the same records as field arrays
   * (read these or `batches`, not both), named by `fields`.
   */
  fieldBatches?: AsyncIterable<FieldRow[]>;
  fields?: FieldNames;
}

/**
 * Opens an input for reading: gzip, byte-order mark, encoding and format are
 * settled from the options, the name and the first bytes; records follow as
 * `batches` is iterated. Anything unreadable throws EngineInputError, here or
 * from the iteration, with a message saying what to fix.
 */
export async function openInput(source: AsyncIterable<Uint8Array>, opts: ParseOptions): Promise<ParsedInput> {
  const limits: ParseLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const named = formatFromName(withoutPgpExtension(opts.filename));
  const { reader, head, gzip, pgp } = await plainBytes(source, opts, limits);

  const notes = new RowNotes();
  const summary: InputSummary = { format: opts.format ?? named ?? "csv", gzip, columns: [], raggedRows: 0, warnings: notes.warnings };
  if (pgp) summary.pgp = pgp;
  const setColumns = (columns: string[]): void => {
    summary.columns = columns;
  };
  const track = <T>(batches: AsyncGenerator<T>): AsyncGenerator<T> => trackNotes(batches, summary, notes);

  let format: InputFormat | "delimited" | undefined = opts.format ?? named;
  if (format === "xlsx" || (format === undefined && isZip(head))) {
    if (!isZip(head)) {
      throw new EngineInputError(
        "The file is not an XLSX workbook (it is not a zip archive). Send the .xlsx file as saved by Excel, or set mappings.options.format to the file's real format.",
      );
    }
    summary.format = "xlsx";
    // exceljs is large: loaded only for workbooks.
    const { parseXlsx } = await import("./xlsx");
    return { summary, batches: track(parseXlsx(reader.chunks(), { sheet: opts.sheet, headerRow: opts.headerRow ?? true, skipEmptyLines: opts.skipEmptyLines ?? true, limits }, setColumns, notes)) };
  }

  const choice = chooseEncoding(head, opts.encoding);
  await loadDecoder(choice);
  summary.encoding = choice.encoding;
  if (!choice.encoding.startsWith("utf-16")) checkNotBinary(head, format === "fixed" ? "fixed-width" : format ? format.toUpperCase() : "CSV, JSON or XML");
  const sample = decodeSample(head, choice);
  format ??= sniffFormat(head, sample);
  // An NDJSON file saved as .json: the name alone does not decide against the content.
  if (format === "json" && !opts.format && !opts.recordPath && looksLikeNdjson(sample.trimStart())) format = "ndjson";
  const text = decodeText(reader.chunks(), choice);

  switch (format) {
    case "fixed": {
      if (!opts.fixedWidth) throw new EngineInputError('A fixed-width file needs its layout: set mappings.options.fixedWidth.columns (name, start, length or end).');
      const { parseFixed } = await import("./fixed");
      return { summary, batches: track(parseFixed(text, opts.fixedWidth, { skipEmptyLines: opts.skipEmptyLines ?? true, limits }, setColumns, notes)) };
    }
    case "json":
    case "ndjson": {
      summary.format = format;
      // The JSON and XML readers (and their libraries) are loaded only for files of their kind: each worker thread saves their memory.
      const { parseJson, parseNdjson } = await import("./json");
      const batches = format === "json" ? parseJson(text, { recordPath: opts.recordPath, limits }, setColumns) : parseNdjson(text, { limits }, setColumns);
      return { summary, batches: track(batches) };
    }
    case "xml": {
      summary.format = "xml";
      const { parseXml } = await import("./xml");
      return { summary, batches: track(parseXml(text, { recordPath: opts.recordPath, limits }, setColumns)) };
    }
    default: {
      const quote = opts.quote ?? '"';
      const explicit = opts.delimiter ?? (format === "tsv" ? "\t" : undefined);
      const { delimiter, newline } = explicit !== undefined && opts.newline ? { delimiter: explicit, newline: opts.newline } : sniffDelimited(sample, quote, explicit);
      summary.delimiter = delimiter;
      summary.newline = newline;
      summary.format = format === "delimited" ? (delimiter === "\t" ? "tsv" : "csv") : format;
      const builder = new RecordBuilder(notes);
      const rows = track(
        parseDelimited(text, { delimiter, newline, quote, headerRow: opts.headerRow ?? true, skipEmptyLines: opts.skipEmptyLines ?? true, limits }, setColumns, builder),
      );
      const records = async function* (): AsyncGenerator<SourceRecord[]> {
        for await (const batch of rows) yield batch.map((row) => builder.build(row, 0, false));
      };
      const fields: FieldNames = { columns: () => builder.columnNames, record: (row) => builder.build(row, 0, false) };
      return opts.fields ? { summary, batches: records(), fieldBatches: rows, fields } : { summary, batches: records() };
    }
  }
}

/** Copies the parsers' running notes into the summary after each batch, and wraps unexpected failures. */
async function* trackNotes<T>(batches: AsyncGenerator<T>, summary: InputSummary, notes: RowNotes): AsyncGenerator<T> {
  try {
    for await (const batch of batches) {
      summary.raggedRows = notes.raggedRows;
      yield batch;
    }
    summary.raggedRows = notes.raggedRows;
  } catch (err) {
    if (err instanceof EngineInputError) throw err;
    throw new EngineInputError(`The ${summary.format.toUpperCase()} file cannot be read: ${(err as Error)?.message ?? String(err)}`);
  }
}
