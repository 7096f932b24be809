import ExcelJS from "exceljs";
import { Readable } from "node:stream";
import { EngineInputError, type ParseLimits, type SourceRecord } from "../types";
import { InflateBudget, meteredSlices } from "./bytes";
import { BoundedWorkbookReader } from "./workbook-reader";
import { Batcher, RecordBuilder, type RowNotes, checkColumns, columnNames, positionalName } from "./records";

export interface XlsxOptions {
  sheet?: string;
  headerRow: boolean;
  skipEmptyLines: boolean;
  limits: ParseLimits;
}

/** The streaming reader's worksheet: what it exposes beyond its published type. */
type SheetReader = AsyncIterable<ExcelJS.Row> & { name?: string };

/**
 * The first worksheet (or the one named by `sheet`) of an XLSX workbook,
 * through exceljs's streaming WorkbookReader: rows arrive as the zip is read,
 * cell values become plain JSON values (see cellValue).
 */
export async function* parseXlsx(
  chunks: AsyncIterable<Uint8Array>,
  opts: XlsxOptions,
  onColumns: (columns: string[]) => void,
  notes: RowNotes,
): AsyncGenerator<SourceRecord[]> {
  const budget = new InflateBudget(opts.limits, "The XLSX workbook");
  const counted = async function* (): AsyncGenerator<Uint8Array> {
    for await (const c of meteredSlices(chunks)) {
      budget.read(c.byteLength);
      yield c;
    }
  };
  const input = Readable.from(counted(), { objectMode: false });
  const reader = new BoundedWorkbookReader(input, {
    worksheets: "emit",
    sharedStrings: "cache",
    // Styles carry the number formats that tell a date from a number.
    styles: "cache",
    hyperlinks: "ignore",
    entries: "ignore",
  }, opts.limits, budget);
  // exceljs reads sheet names from xl/workbook.xml; when a zip stores that entry after the sheets
  // (some writers do; Excel does not), it would dereference a model it has not read yet.
  // Such sheets keep their default names (Sheet1, ...).
  const withModel = reader as unknown as { model?: { sheets?: unknown[] } };
  withModel.model ??= { sheets: [] };
  const builder = new RecordBuilder(notes);
  const seen: string[] = [];
  let columns: string[] | null = null;
  let records = 0;
  let read = false;
  const batch = new Batcher();
  try {
    for await (const ws of reader as AsyncIterable<SheetReader>) {
      const name = ws.name ?? `Sheet${seen.length + 1}`;
      seen.push(name);
      if (read || (opts.sheet !== undefined && name !== opts.sheet)) {
        // Read other sheets through to their end: exceljs may have spooled them to temporary
        // files that it removes only once a sheet is consumed (skipping one fails on a removed file).
        for await (const _ of ws);
        continue;
      }
      read = true;
      for await (const row of ws) {
        const values = rowValues(row);
        if (values.length > opts.limits.maxColumns) checkColumns(values.length, opts.limits, `Sheet "${name}" row ${row.number}`);
        if (opts.skipEmptyLines && values.every((v) => v === null || v === "")) continue;
        if (columns === null) {
          columns = opts.headerRow ? columnNames(values) : values.map((_, i) => positionalName(i + 1));
          builder.setColumns(columns);
          onColumns(columns);
          if (opts.headerRow) continue;
        }
        // Trailing empty cells are not stored in the sheet: pad so they read as empty, not as a short row.
        while (values.length < columns.length) values.push(null);
        records++;
        batch.push(builder.build(values, records));
        yield* batch.full();
      }
    }
  } catch (err) {
    if (err instanceof EngineInputError) throw err;
    const msg = (err as Error)?.message ?? String(err);
    const why = msg === "FILE_ENDED" ? "the zip archive ends early (a truncated file?)" : msg;
    throw new EngineInputError(`The XLSX workbook cannot be read: ${why}. Open it in Excel and save it again as .xlsx, or send CSV.`);
  } finally {
    input.destroy();
  }
  if (!read) {
    throw new EngineInputError(
      opts.sheet !== undefined
        ? `The workbook has no sheet named "${opts.sheet}"; its sheets are: ${seen.map((s) => `"${s}"`).join(", ") || "none"}.`
        : "The file is a zip archive but holds no worksheet; is it an XLSX workbook?",
    );
  }
  if (columns === null) throw new EngineInputError("The worksheet is empty: it has no rows.");
  yield* batch.rest();
}

function rowValues(row: ExcelJS.Row): unknown[] {
  const raw = row.values as unknown[];
  const out: unknown[] = new Array(Math.max(0, raw.length - 1));
  for (let i = 1; i < raw.length; i++) out[i - 1] = cellValue(raw[i]);
  return out;
}

/**
 * A cell as a plain JSON value: numbers, text and booleans as they are; dates
 * as ISO text (a date without a time as YYYY-MM-DD); rich text and hyperlinks
 * as their text; formulas as their cached result; errors as their code
 * (#N/A); empty cells as null.
 */
export function cellValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v !== "object") return v;
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) return null;
    const iso = v.toISOString();
    return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : iso;
  }
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.richText)) return (o.richText as { text?: string }[]).map((r) => r.text ?? "").join("");
  if ("formula" in o || "sharedFormula" in o) return cellValue(o.result);
  if (typeof o.error === "string") return o.error;
  if ("text" in o) return cellValue(o.text);
  return JSON.stringify(v);
}
