/**
 * Finding rows in a processed JSON file (layout in ./processed-file.ts)
 * without parsing every row: when the term needs no JSON escaping, a row can
 * only match if its raw line contains the term (or, ignoring case, if its
 * lower-cased line does), so the text between candidates is only counted.
 * Candidates are parsed and their values checked, which also drops lines
 * where the term only appears in a field name.
 */

export type Row = Record<string, unknown>;

export interface RowMatcher {
  /** No term: every row matches, with no matching fields. */
  all: boolean;
  /** Text every matching raw line contains (lower-cased unless caseSensitive), or null when no pre-check is safe. */
  needle: string | null;
  caseSensitive: boolean;
  /** The fields of a row whose values match, or null when none does. */
  match(row: Row): string[] | null;
}

/** Characters JSON.stringify writes escaped: a term with one cannot be looked for in the raw line. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are escaped by JSON
const ESCAPED_IN_JSON = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A value's text form: strings as they are, numbers and booleans as written, objects and arrays as JSON; null has none. */
export function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

export function rowMatcher(opts: { searchTerm?: string; fieldName?: string; exactMatch: boolean; caseSensitive: boolean }): RowMatcher {
  const term = opts.searchTerm ?? "";
  if (term === "") return { all: true, needle: null, caseSensitive: opts.caseSensitive, match: () => [] };
  const { caseSensitive, exactMatch, fieldName } = opts;
  const wanted = caseSensitive ? term : term.toLowerCase();
  const test = (text: string) => {
    const t = caseSensitive ? text : text.toLowerCase();
    return exactMatch ? t === wanted : t.includes(wanted);
  };
  const match = (row: Row): string[] | null => {
    if (fieldName !== undefined) {
      if (!Object.hasOwn(row, fieldName)) return null;
      const t = textOf(row[fieldName]);
      return t !== null && test(t) ? [fieldName] : null;
    }
    let out: string[] | null = null;
    for (const key in row) {
      const t = textOf(row[key]);
      if (t !== null && test(t)) (out ??= []).push(key);
    }
    return out;
  };
  return { all: false, needle: ESCAPED_IN_JSON.test(term) ? null : wanted, caseSensitive, match };
}

export interface FileSearch {
  /** Matches of this file to pass over before collecting (the part of the offset not used up by earlier files). */
  skip: number;
  /** Matches to collect after those. */
  take: number;
  onHit(rowIndex: number, row: Row, matchingFields: string[]): void;
}

const NL = "\n";
const BRACE = 123;
const COMMA = 44;
const CR = 13;

function rowText(text: string, start: number, nl: number): string {
  let end = nl;
  while (end > start && (text.charCodeAt(end - 1) === COMMA || text.charCodeAt(end - 1) === CR)) end--;
  return text.slice(start, end);
}

function parseRow(line: string): Row | null {
  try {
    const v = JSON.parse(line);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Row) : null;
  } catch {
    return null;
  }
}

/** Scans one processed file; resolves to the number of matching rows in it. */
export async function searchRows(stream: ReadableStream<Uint8Array>, m: RowMatcher, s: FileSearch): Promise<number> {
  let rowIndex = 0;
  let matches = 0;
  const windowEnd = s.skip + s.take;

  /** A verified match: counted, and collected when inside the window. */
  const hit = (text: string, start: number, nl: number, index: number, parsed?: Row, fields?: string[]) => {
    const ordinal = matches++;
    if (ordinal < s.skip || ordinal >= windowEnd) return;
    const row = parsed ?? parseRow(rowText(text, start, nl));
    if (row) s.onHit(index, row, fields ?? []);
  };
  const check = (text: string, start: number, nl: number, index: number) => {
    const row = parseRow(rowText(text, start, nl));
    if (!row) return;
    const fields = m.match(row);
    if (fields) hit(text, start, nl, index, row, fields);
  };

  /** `text` holds whole lines, each ending in a newline. */
  const region = (text: string) => {
    let pos = 0;
    const n = text.length;
    if (m.all) {
      while (pos < n) {
        const nl = text.indexOf(NL, pos);
        if (text.charCodeAt(pos) === BRACE) hit(text, pos, nl, rowIndex++);
        pos = nl + 1;
      }
      return;
    }
    let hay: string | null = null;
    if (m.needle !== null) {
      hay = m.caseSensitive ? text : text.toLowerCase();
      // Positions map one to one only when lower-casing kept the length (it does but for a few letters like U+0130).
      if (hay.length !== n) hay = null;
    }
    if (hay === null) {
      while (pos < n) {
        const nl = text.indexOf(NL, pos);
        if (text.charCodeAt(pos) === BRACE) {
          const index = rowIndex++;
          const line = text.slice(pos, nl);
          if (m.needle === null || (m.caseSensitive ? line : line.toLowerCase()).includes(m.needle)) check(text, pos, nl, index);
        }
        pos = nl + 1;
      }
      return;
    }
    const needle = m.needle!;
    while (pos < n) {
      const p = hay.indexOf(needle, pos);
      // Count the rows before the candidate's line without reading them (all the rest when there is none).
      const stop = p === -1 ? n : p;
      let nl = text.indexOf(NL, pos);
      while (nl < stop) {
        if (text.charCodeAt(pos) === BRACE) rowIndex++;
        pos = nl + 1;
        if (pos >= n) return;
        nl = text.indexOf(NL, pos);
      }
      if (text.charCodeAt(pos) === BRACE) check(text, pos, nl, rowIndex++);
      pos = nl + 1;
    }
  };

  const decoder = new TextDecoder();
  let carry = "";
  for await (const chunk of stream) {
    const text = carry + decoder.decode(chunk, { stream: true });
    const last = text.lastIndexOf(NL);
    if (last === -1) {
      carry = text;
      continue;
    }
    region(last === text.length - 1 ? text : text.slice(0, last + 1));
    carry = text.slice(last + 1);
  }
  const tail = carry + decoder.decode();
  if (tail.length > 0) region(`${tail}\n`);
  return matches;
}
