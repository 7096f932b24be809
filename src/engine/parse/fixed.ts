import { EngineInputError, type ParseLimits, type SourceRecord } from "../types";
import { Batcher, mib, type RowNotes } from "./records";

/** One column of a fixed-width layout: 1-based `start`, and its `length` or its inclusive `end` (as record layouts print them). */
export interface FixedColumn {
  name: string;
  start: number;
  length?: number;
  end?: number;
}

/** A fixed-width layout (mappings.options.fixedWidth; docs/decisions/formats.md). */
export interface FixedWidthSpec {
  columns: FixedColumn[];
  /** What is cut from each value: blanks at both ends (default), at the right only, or nothing. */
  trim?: "both" | "right" | "none";
  /** Lines before the first record (a title or column ruler). */
  skipLines?: number;
  /** Only lines holding `value` at 1-based position `start` are records (e.g. NACHA entry detail lines start with "6"); others are passed over. */
  recordType?: { start: number; value: string };
}

interface Cut {
  name: string;
  from: number;
  to: number;
}

/**
 * Reads fixed-width text line by line (`\n`, `\r\n`), cutting each record at
 * the layout's positions, counted in characters of the decoded text. A line
 * shorter than the layout leaves the columns that start past its end out of
 * the record (validation then names them when required) and is counted as
 * ragged; so is a line with non-blank text past the layout's last column.
 */
export async function* parseFixed(
  text: AsyncIterable<string>,
  spec: FixedWidthSpec,
  opts: { skipEmptyLines: boolean; limits: ParseLimits },
  setColumns: (columns: string[]) => void,
  notes: RowNotes,
): AsyncGenerator<SourceRecord[]> {
  const cuts: Cut[] = spec.columns.map((c) => ({ name: c.name, from: c.start - 1, to: c.end !== undefined ? c.end : c.start - 1 + (c.length ?? 0) }));
  const width = Math.max(...cuts.map((c) => c.to));
  const unsafe = cuts.some((c) => c.name === "__proto__");
  const trim = spec.trim ?? "both";
  const clean = trim === "both" ? (s: string) => s.trim() : trim === "right" ? (s: string) => s.trimEnd() : (s: string) => s;
  const skip = spec.skipLines ?? 0;
  const type = spec.recordType ? { from: spec.recordType.start - 1, value: spec.recordType.value } : null;
  const maxLine = opts.limits.maxRecordBytes;
  setColumns(cuts.map((c) => c.name));

  const batcher = new Batcher();
  let lineNo = 0;
  let records = 0;
  const take = (raw: string): void => {
    lineNo++;
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (lineNo <= skip) return;
    if (opts.skipEmptyLines && line.trim() === "") return;
    if (type && line.substr(type.from, type.value.length) !== type.value) return;
    records++;
    const rec: SourceRecord = {};
    for (const c of cuts) {
      if (c.from >= line.length) continue;
      const v = clean(line.slice(c.from, c.to));
      if (unsafe) Object.defineProperty(rec, c.name, { value: v, enumerable: true, writable: true, configurable: true });
      else rec[c.name] = v;
    }
    if (line.length < width || (line.length > width && line.slice(width).trim() !== "")) {
      notes.raggedRows++;
      if (notes.warnings.length < 20) notes.warnings.push(`line ${lineNo} (record ${records}) is ${line.length} characters long; the layout spans ${width}`);
    }
    batcher.push(rec);
  };

  let carry = "";
  for await (const piece of text) {
    const s = carry === "" ? piece : carry + piece;
    let at = 0;
    for (let nl = s.indexOf("\n"); nl >= 0; nl = s.indexOf("\n", at)) {
      take(s.slice(at, nl));
      at = nl + 1;
    }
    carry = s.slice(at);
    if (carry.length > maxLine) {
      throw new EngineInputError(
        `Line ${lineNo + 1} is longer than ${mib(maxLine)} without a line end (limits.maxRecordBytes); a fixed-width file has one record a line.`,
      );
    }
    yield* batcher.full();
  }
  if (carry !== "") take(carry);
  yield* batcher.rest();
}
