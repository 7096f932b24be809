import type { Transform } from "../domain/mappings";

/**
 * The closed transform list (docs/decisions/mappings.md, engine.md).
 * Each function takes a present value (never undefined) and returns the
 * converted value, or FAIL when the value cannot be converted; the caller
 * then asks `describeFailure` for the message. Returning a sentinel instead
 * of throwing keeps rows that fail cheap, and allocates nothing on success.
 */
export const FAIL: unique symbol = Symbol("transform failed");
export type TransformResult = unknown | typeof FAIL;
export type TransformFn = (value: unknown) => TransformResult;

// `1,234.5` is refused on purpose: a thousands separator and a decimal comma
// cannot be told apart, and guessing would corrupt amounts.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// A date, optionally a time (`T` or one space), optionally an offset; anything
// looser (`01/02/2024`) is ambiguous between day-first and month-first.
const ISO_DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

// A Map, not an object: a value such as "constructor" must not find Object.prototype's.
const BOOLEAN_WORDS: [string, boolean][] = [["true", true], ["false", false], ["yes", true], ["no", false], ["1", true], ["0", false], ["y", true], ["n", false]];
const BOOLEANS_MAP = new Map(BOOLEAN_WORDS);

function isPlainScalar(v: unknown): v is string | number | boolean | bigint {
  const t = typeof v;
  return t === "string" || t === "number" || t === "boolean" || t === "bigint";
}

function asText(v: unknown): string | typeof FAIL {
  if (typeof v === "string") return v;
  if (isPlainScalar(v)) return String(v);
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? FAIL : v.toISOString();
  return FAIL;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  const leap = m === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= DAYS_IN_MONTH[m - 1]! + (leap ? 1 : 0);
}

/** Unsigned digits with at most one point (the common case in files), checked without a regex or a copy. */
function isPlainDecimal(s: string): boolean {
  const n = s.length;
  if (n === 0 || n > 20) return false;
  let point = false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === 46 && !point) point = true;
    else if (c < 48 || c > 57) return false;
  }
  return n > 1 || !point;
}

/** True when `s` is ASCII without a character in [lo, hi]: its case change would be itself. */
function asciiWithout(s: string, lo: number, hi: number): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || (c >= lo && c <= hi)) return false;
  }
  return true;
}

/** The number written by `len` ASCII digits at `at`, or -1. */
function digitsAt(s: string, at: number, len: number): number {
  let n = 0;
  for (let i = at; i < at + len; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/** Text as a decimal number under the DECIMAL rule, or NaN. */
function decimal(s: string): number {
  const n = s.length;
  if (n > 0 && n <= 15) {
    // Plain digits with at most one point, the common case, computed as they are checked: at most 15 digits
    // make a whole number below 2^53, so the division by a power of ten is exact IEEE arithmetic on exact
    // values and gives the same double as Number(s) (test/engine.map.test.ts checks this).
    let v = 0;
    let i = 0;
    let point = -1;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c === 46 && point < 0) {
        point = i;
        continue;
      }
      const d = c - 48;
      if (d < 0 || d > 9) break;
      v = v * 10 + d;
    }
    if (i === n && (point < 0 || n > 1)) return point < 0 ? v : v / POW10[n - 1 - point]!;
  }
  if (isPlainDecimal(s)) return Number(s);
  const t = s.trim();
  return DECIMAL.test(t) ? Number(t) : Number.NaN;
}

/** Milliseconds since the epoch for an ISO 8601 date or date-time (no offset = UTC), or NaN. */
function parseIsoInstant(text: string): number {
  const m = ISO_DATETIME.exec(text.trim());
  if (!m) return Number.NaN;
  const [, ys, mos, ds, hs, mis, ss, frac, zone] = m;
  const y = Number(ys);
  const mo = Number(mos);
  const d = Number(ds);
  if (!validDate(y, mo, d)) return Number.NaN;
  const h = hs === undefined ? 0 : Number(hs);
  const mi = mis === undefined ? 0 : Number(mis);
  const s = ss === undefined ? 0 : Number(ss);
  if (h > 23 || mi > 59 || s > 59) return Number.NaN;
  const ms = frac === undefined ? 0 : Math.floor(Number(`0.${frac}`) * 1000);
  let offsetMin = 0;
  if (zone !== undefined && zone.toUpperCase() !== "Z") {
    const sign = zone[0] === "-" ? -1 : 1;
    const digits = zone.slice(1).replace(":", "");
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return Number.NaN;
    offsetMin = sign * (oh * 60 + om);
  }
  return Date.UTC(y, mo - 1, d, h, mi, s, ms) - offsetMin * 60_000;
}

function toInstant(v: unknown): number {
  if (v instanceof Date) return v.getTime();
  if (typeof v === "string") return parseIsoInstant(v);
  return Number.NaN;
}

export const TRANSFORM_FNS: Record<Transform, TransformFn> = {
  trim: (v) => {
    const t = asText(v);
    if (t === FAIL) return FAIL;
    // Most values need no trimming; returning them as they are saves a copy per cell.
    return t.length > 0 && t.charCodeAt(0) > 32 && t.charCodeAt(t.length - 1) > 32 && t.charCodeAt(0) < 127 && t.charCodeAt(t.length - 1) < 127 ? t : t.trim();
  },
  uppercase: (v) => {
    const t = asText(v);
    if (t === FAIL) return FAIL;
    return asciiWithout(t, 97, 122) ? t : t.toUpperCase();
  },
  lowercase: (v) => {
    const t = asText(v);
    if (t === FAIL) return FAIL;
    return asciiWithout(t, 65, 90) ? t : t.toLowerCase();
  },
  string: (v) => {
    if (typeof v === "string") return v;
    if (v === null) return null;
    const t = asText(v);
    return t === FAIL ? JSON.stringify(v) : t;
  },
  number: (v) => {
    const n = typeof v === "string" ? decimal(v) : typeof v === "number" ? v : Number.NaN;
    return Number.isFinite(n) ? n : FAIL;
  },
  integer: (v) => {
    const n = typeof v === "string" ? decimal(v) : typeof v === "number" ? v : Number.NaN;
    return Number.isSafeInteger(n) ? n : FAIL;
  },
  boolean: (v) => {
    if (typeof v === "boolean") return v;
    if (typeof v === "number") return v === 1 ? true : v === 0 ? false : FAIL;
    if (typeof v !== "string") return FAIL;
    const b = BOOLEANS_MAP.get(v) ?? BOOLEANS_MAP.get(v.trim().toLowerCase());
    return b === undefined ? FAIL : b;
  },
  date: (v) => {
    if (typeof v === "string" && v.length === 10) {
      // YYYY-MM-DD as given, the common case: read by position, without a regex match or copies.
      const y = digitsAt(v, 0, 4);
      const m = digitsAt(v, 5, 2);
      const d = digitsAt(v, 8, 2);
      if (y >= 0 && m >= 0 && d >= 0 && v.charCodeAt(4) === 45 && v.charCodeAt(7) === 45) return validDate(y, m, d) ? v : FAIL;
    }
    if (typeof v === "string") {
      const m = ISO_DATE.exec(v.trim());
      if (m) return validDate(Number(m[1]), Number(m[2]), Number(m[3])) ? m[0] : FAIL;
    }
    const t = toInstant(v);
    return Number.isNaN(t) ? FAIL : new Date(t).toISOString().slice(0, 10);
  },
  datetime: (v) => {
    const t = toInstant(v);
    return Number.isNaN(t) ? FAIL : new Date(t).toISOString();
  },
};

const EXPECTS: Record<Transform, string> = {
  trim: "text",
  uppercase: "text",
  lowercase: "text",
  string: "text",
  number: "a decimal number such as 1234.5 (no thousands separators)",
  integer: "a whole number",
  boolean: "one of true/false/yes/no/1/0/y/n",
  date: "an ISO date (YYYY-MM-DD) or date-time",
  datetime: "an ISO 8601 date-time such as 2024-05-01T09:30:00Z",
};

/** A short, quoted rendering of a value for messages (never the whole of a long value). */
export function preview(v: unknown): string {
  let text: string;
  if (typeof v === "string") text = JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  else if (v === null || typeof v !== "object") text = String(v);
  else text = Array.isArray(v) ? "an array" : v instanceof Date ? v.toISOString() : "an object";
  return text;
}

/** Why `transform` refused `value`, for the row's field error. */
export function describeFailure(transform: Transform, value: unknown): string {
  return `transform '${transform}': ${preview(value)} is not ${EXPECTS[transform]}`;
}
