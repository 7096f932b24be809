/**
 * Finding rows in a processed JSON file (layout in ./processed-file.ts)
 * without parsing every row. The engine writes each row with
 * JSON.stringify, so when the term has no character JSON escapes:
 *
 * - a row can only match if its raw line contains the term (ignoring case:
 *   if its lower-cased line does), so lines between candidates are only
 *   counted;
 * - a candidate line without backslashes is decided on the raw text: its
 *   top-level members are walked and the term looked for inside values only
 *   (not field names), with `fieldName` and `exactMatch` applied the same
 *   way. Numbers and booleans are written exactly as their text form.
 *
 * Anything else (escapes, nested values, the page's own rows) is parsed and
 * checked value by value. Parsing costs about 2 µs a row here; the raw
 * decision a fraction of that, which is what keeps a common term fast.
 */

import { streamed } from "../../runtime/gc";

export type Row = Record<string, unknown>;

export interface RowMatcher {
  /** No term: every row matches, with no matching fields. */
  all: boolean;
  /** A matching raw line contains one of these (lower-cased unless caseSensitive); null when no pre-check is safe. */
  needles: string[] | null;
  /** The term needs no escaping in JSON: its one needle can be looked for in raw values (see rawVerdict). */
  plain: boolean;
  caseSensitive: boolean;
  exactMatch: boolean;
  /** The field to look in, as JSON writes its name between the quotes; null for any field. */
  rawField: string | null;
  /** The fields of a row whose values match, or null when none does. */
  match(row: Row): string[] | null;
  /** Whether any field matches (stops at the first). */
  test(row: Row): boolean;
}

/** Characters JSON.stringify writes escaped. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are escaped by JSON
const ESCAPED_IN_JSON = /["\\\u0000-\u001f]/;
const SURROGATE = /[\ud800-\udfff]/;

/** A value's text form: strings as they are, numbers and booleans as written, objects and arrays as JSON; null has none. */
export function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

export function rowMatcher(opts: { searchTerm?: string; fieldName?: string; exactMatch: boolean; caseSensitive: boolean }): RowMatcher {
  const term = opts.searchTerm ?? "";
  const { caseSensitive, exactMatch, fieldName } = opts;
  const base = { caseSensitive, exactMatch, rawField: fieldName === undefined ? null : JSON.stringify(fieldName).slice(1, -1) };
  if (term === "") return { ...base, all: true, needles: null, plain: false, match: () => [], test: () => true };
  const wanted = caseSensitive ? term : term.toLowerCase();
  const hit = (value: unknown) => {
    const text = textOf(value);
    if (text === null) return false;
    const t = caseSensitive ? text : text.toLowerCase();
    return exactMatch ? t === wanted : t.includes(wanted);
  };
  const match = (row: Row): string[] | null => {
    if (fieldName !== undefined) return Object.hasOwn(row, fieldName) && hit(row[fieldName]) ? [fieldName] : null;
    let out: string[] | null = null;
    for (const key in row) if (hit(row[key])) (out ??= []).push(key);
    return out;
  };
  const test = (row: Row): boolean => {
    if (fieldName !== undefined) return Object.hasOwn(row, fieldName) && hit(row[fieldName]);
    for (const key in row) if (hit(row[key])) return true;
    return false;
  };
  // A string value holding the term holds its escaped form in the raw line (JSON escapes
  // character by character); a nested value's text is the raw JSON itself, so holds it as is.
  // A lone surrogate may be half of a pair in the file: no pre-check then.
  const plain = !ESCAPED_IN_JSON.test(term);
  const needles = SURROGATE.test(term) ? null : plain ? [wanted] : [wanted, JSON.stringify(wanted).slice(1, -1)];
  return { ...base, all: false, needles, plain, match, test };
}

export interface FileSearch {
  /** Matches of this file to pass over before collecting (the part of the offset not used up by earlier files). */
  skip: number;
  /** Matches to collect after those. */
  take: number;
  onHit(rowIndex: number, row: Row, matchingFields: string[]): void;
}

const NL = "\n";
const QUOTE = 34;
const COMMA = 44;
const COLON = 58;
const CR = 13;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;

/** Where a row's text ends: before its separator comma (and any CR). */
function rowEnd(text: string, start: number, nl: number): number {
  let end = nl;
  while (end > start && (text.charCodeAt(end - 1) === COMMA || text.charCodeAt(end - 1) === CR)) end--;
  return end;
}

function parseRow(text: string, start: number, end: number): Row | null {
  try {
    const v = JSON.parse(text.slice(start, end));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Row) : null;
  } catch {
    return null;
  }
}

/**
 * Decides a candidate row `text[start, end)` (no backslashes in it) on its
 * raw text; `hay` is the text as searched (lower-cased or not, same
 * positions) and `occ` the needle's first position in the row. Undefined
 * when the row has a shape this does not walk (nested values, `{}`).
 */
export function rawVerdict(text: string, hay: string, start: number, end: number, m: RowMatcher, occ: number): boolean | undefined {
  const needle = m.needles![0]!;
  const n = needle.length;
  if (text.charCodeAt(start) !== OPEN_BRACE) return undefined;
  let i = start + 1;
  while (i < end) {
    if (text.charCodeAt(i) !== QUOTE) return undefined;
    const keyEnd = text.indexOf('"', i + 1);
    const relevant = m.rawField === null || (keyEnd - i - 1 === m.rawField.length && text.startsWith(m.rawField, i + 1));
    i = keyEnd + 1;
    if (text.charCodeAt(i) !== COLON) return undefined;
    i++;
    const c = text.charCodeAt(i);
    let from: number;
    let to: number;
    if (c === QUOTE) {
      from = i + 1;
      to = text.indexOf('"', from);
      i = to + 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      return undefined;
    } else {
      from = i;
      to = i;
      while (to < end && text.charCodeAt(to) !== COMMA && text.charCodeAt(to) !== CLOSE_BRACE) to++;
      i = to;
      if (to - from === 4 && text.startsWith("null", from)) from = -1;
    }
    if (relevant && from >= 0) {
      if (m.exactMatch) {
        if (to - from === n && hay.startsWith(needle, from)) return true;
      } else {
        if (occ < from) occ = hay.indexOf(needle, from);
        if (occ === -1 || occ >= end) return false;
        if (occ + n <= to) return true;
      }
    }
    const d = text.charCodeAt(i);
    if (d === CLOSE_BRACE) return false;
    if (d !== COMMA) return undefined;
    i++;
  }
  return undefined;
}

/** Scans one processed file; resolves to the number of matching rows in it. */
export async function searchRows(stream: ReadableStream<Uint8Array>, m: RowMatcher, s: FileSearch): Promise<number> {
  let rowIndex = 0;
  let matches = 0;
  const windowEnd = s.skip + s.take;
  const inWindow = () => matches >= s.skip && matches < windowEnd;

  /** A row of the page: parsed, its matching fields found. */
  const collect = (text: string, start: number, nl: number, index: number) => {
    const row = parseRow(text, start, rowEnd(text, start, nl));
    if (!row) return;
    const fields = m.match(row);
    if (!fields) return;
    matches++;
    s.onHit(index, row, fields);
  };
  /** A row outside the page: only whether it matches. */
  const count = (text: string, start: number, nl: number, verdict?: boolean) => {
    if (verdict === undefined) {
      const row = parseRow(text, start, rowEnd(text, start, nl));
      verdict = row !== null && m.test(row);
    }
    if (verdict) matches++;
  };

  /** `text` holds whole lines, each ending in a newline. */
  const region = (text: string) => {
    let pos = 0;
    const n = text.length;
    if (m.all) {
      while (pos < n) {
        const nl = text.indexOf(NL, pos);
        if (text.charCodeAt(pos) === OPEN_BRACE) {
          if (inWindow()) collect(text, pos, nl, rowIndex);
          else matches++;
          rowIndex++;
        }
        pos = nl + 1;
      }
      return;
    }
    const needles = m.needles;
    let hay: string | null = null;
    if (needles !== null) {
      hay = m.caseSensitive ? text : text.toLowerCase();
      // Positions map one to one only when lower-casing kept the length (it does but for a few letters like U+0130).
      if (hay.length !== n) hay = null;
    }
    if (hay === null) {
      while (pos < n) {
        const nl = text.indexOf(NL, pos);
        if (text.charCodeAt(pos) === OPEN_BRACE) {
          const line = text.slice(pos, nl);
          const lower = m.caseSensitive ? line : line.toLowerCase();
          if (needles === null || needles.some((x) => lower.includes(x))) {
            if (inWindow()) collect(text, pos, nl, rowIndex);
            else count(text, pos, nl);
          }
          rowIndex++;
        }
        pos = nl + 1;
      }
      return;
    }
    const found = needles!.map(() => -2); // each needle's next position at or after pos; -1: none left
    let backslash = -2; // the same for backslashes
    while (pos < n) {
      let p = -1;
      for (let k = 0; k < found.length; k++) {
        if (found[k] !== -1 && found[k]! < pos) found[k] = hay.indexOf(needles![k]!, pos);
        if (found[k] !== -1 && (p === -1 || found[k]! < p)) p = found[k]!;
      }
      // Count the rows before the candidate's line without reading them (all the rest when there is none).
      const stop = p === -1 ? n : p;
      let nl = text.indexOf(NL, pos);
      while (nl < stop) {
        if (text.charCodeAt(pos) === OPEN_BRACE) rowIndex++;
        pos = nl + 1;
        if (pos >= n) return;
        nl = text.indexOf(NL, pos);
      }
      if (text.charCodeAt(pos) === OPEN_BRACE) {
        if (inWindow()) collect(text, pos, nl, rowIndex);
        else {
          const end = rowEnd(text, pos, nl);
          if (backslash !== -1 && backslash < pos) backslash = text.indexOf("\\", pos);
          const escaped = backslash !== -1 && backslash < end;
          count(text, pos, nl, escaped || !m.plain ? undefined : rawVerdict(text, hay, pos, end, m, p));
        }
        rowIndex++;
      }
      pos = nl + 1;
    }
  };

  const decoder = new TextDecoder();
  let carry = "";
  for await (const chunk of stream) {
    streamed(chunk.byteLength);
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
