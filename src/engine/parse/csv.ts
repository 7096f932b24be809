import Papa from "papaparse";
import { EngineInputError, type FieldRow, type ParseLimits, UnclosedQuoteError } from "../types";
import { BATCH_SIZE, type RecordBuilder, checkColumns, columnNames, mib, positionalName } from "./records";

export interface DelimitedOptions {
  delimiter: string;
  newline: "\n" | "\r\n" | "\r";
  quote: string;
  headerRow: boolean;
  skipEmptyLines: boolean;
  limits: ParseLimits;
}

/** Delimiters tried when none is set: papaparse's guess over the first rows. */
const GUESSED_DELIMITERS = [",", ";", "\t", "|"];

/** Delimiter and line ending from a sample of the text, by papaparse's own guessing. */
export function sniffDelimited(sample: string, quote: string, delimiter?: string): { delimiter: string; newline: "\n" | "\r\n" | "\r" } {
  // The last line of a sample is usually cut; leave it out of the guess.
  const cut = sample.lastIndexOf("\n");
  const text = cut > 0 ? sample.slice(0, cut + 1) : sample;
  const res = Papa.parse<string[]>(text, {
    preview: 50,
    quoteChar: quote,
    delimiter: delimiter ?? "",
    delimitersToGuess: GUESSED_DELIMITERS,
    skipEmptyLines: true,
  });
  const nl = res.meta.linebreak;
  return {
    delimiter: delimiter ?? res.meta.delimiter ?? ",",
    newline: nl === "\r\n" || nl === "\r" ? nl : "\n",
  };
}

/** papaparse's chunk-level parser (exported as Papa.Parser, untyped in @types/papaparse). */
interface ChunkParser {
  parse(input: string, baseIndex: number, ignoreLastRow: boolean): {
    data: string[][];
    errors: { code: string; row?: number }[];
    meta: { cursor: number };
  };
}
const ChunkParserClass = (Papa as unknown as { Parser: new (config: object) => ChunkParser }).Parser;

/**
 * CSV/TSV records, streaming: each text piece is handed to papaparse's chunk
 * parser as arrays (header:false, the fast path), the unfinished last row
 * carried into the next piece. Batches hold the field arrays (FieldRow);
 * `builder` (given the header here) turns one into its record, and counts
 * rows that do not fit the header.
 */
export async function* parseDelimited(
  text: AsyncIterable<string>,
  opts: DelimitedOptions,
  onColumns: (columns: string[]) => void,
  builder: RecordBuilder,
): AsyncGenerator<FieldRow[]> {
  const { limits } = opts;
  const parser = new ChunkParserClass({ delimiter: opts.delimiter, newline: opts.newline, quoteChar: opts.quote });
  let columns: string[] | null = null;
  let width = 0;
  let partial = "";
  let base = 0;
  let records = 0;
  let ready: FieldRow[] = [];

  const take = (rows: string[][], checkSize: boolean): void => {
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r]!;
      if (opts.skipEmptyLines && row[0]!.trim() === "" && isBlank(row)) continue;
      if (row.length > limits.maxColumns) checkColumns(row.length, limits, columns ? `Record ${records + 1}` : "The header row");
      if (checkSize) checkRowSize(row, records + 1, opts.delimiter.length, limits);
      if (columns === null) {
        columns = opts.headerRow ? columnNames(row) : row.map((_, i) => positionalName(i + 1));
        width = columns.length;
        builder.setColumns(columns);
        onColumns(columns);
        if (opts.headerRow) continue;
      }
      records++;
      if (row.length !== width) builder.note(row, records);
      ready.push(row);
    }
  };
  // Each parsed piece's rows go out before the next piece is parsed, and nothing here holds them once they are
  // out: papaparse's result array (which holds every row of the piece) is emptied as soon as they are taken, and
  // the piece itself is let go. The engine's forced collections (src/engine/process.ts) run while this generator
  // waits at a yield; whatever is reachable then is promoted to the old generation, and only a full collection
  // frees it. Holding the piece's rows there promoted about 2-4 MB per collection.
  function* drain(): Generator<FieldRow[]> {
    while (ready.length > 0) {
      const out = ready.length <= BATCH_SIZE ? ready : ready.splice(0, BATCH_SIZE);
      if (out === ready) ready = [];
      yield out;
    }
  }

  // Read by hand, not with for-await, so that no loop variable keeps the last piece alive while its rows are out.
  const pieces = text[Symbol.asyncIterator]();
  let readToEnd = false;
  try {
    for (;;) {
      const next = await pieces.next();
      if (next.done) {
        readToEnd = true;
        break;
      }
      let input: string = partial.length > 0 ? partial + next.value : next.value;
      next.value = "";
      const parsed = parser.parse(input, base, true);
      take(parsed.data, input.length > limits.maxRecordBytes);
      parsed.data.length = 0;
      const cursor = parsed.meta.cursor;
      partial = input.slice(cursor - base);
      input = "";
      base = cursor;
      if (partial.length > limits.maxRecordBytes) {
        throw new EngineInputError(
          `Record ${records + 1} (starting at character ${base}) is longer than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes) ` +
            "and is not finished: a quote that is never closed, or a file without line breaks? " +
            "Check mappings.options.quote and mappings.options.delimiter.",
        );
      }
      yield* drain();
    }
  } finally {
    // Stopped early (a limit, or the consumer gave up): release the source, as for-await would, without letting
    // a failure to release it hide why reading stopped.
    if (!readToEnd) {
      try {
        await pieces.return?.();
      } catch {}
    }
  }
  if (partial.length > 0) {
    const res = parser.parse(partial, base, false);
    const unclosed = res.errors.find((e) => e.code === "MissingQuotes");
    if (unclosed) {
      throw new UnclosedQuoteError(
        `Record ${records + 1 + (unclosed.row ?? 0)} has a quoted field that is never closed before the end of the file ` +
          "(a truncated file, or a stray quote character? Set mappings.options.quote if the file uses another quote).",
      );
    }
    take(res.data, partial.length > limits.maxRecordBytes);
  }
  if (columns === null) {
    throw new EngineInputError("The file has no rows: it is empty or holds only blank lines.");
  }
  yield* drain();
}

/** Blank: every field empty or whitespace (a `,,,` line from a spreadsheet, a stray `\r`). */
export function isBlank(row: readonly string[]): boolean {
  for (let i = 0; i < row.length; i++) if (row[i]!.trim() !== "") return false;
  return true;
}

/** Only when a parsed piece is larger than the limit can one of its rows be: then each is measured. */
function checkRowSize(row: readonly string[], recordNo: number, delimiterLength: number, limits: ParseLimits): void {
  let size = (row.length - 1) * delimiterLength;
  for (let i = 0; i < row.length; i++) size += row[i]!.length;
  if (size > limits.maxRecordBytes) {
    throw new EngineInputError(
      `Record ${recordNo} is longer than ${mib(limits.maxRecordBytes)} (limits.maxRecordBytes). ` +
        "Check mappings.options.quote and mappings.options.delimiter, or split the record.",
    );
  }
}
