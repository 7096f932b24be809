import type { Transform } from "../services/pipelines/shapes";

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

const BOOLEANS: Record<string, boolean> = { true: true, false: false, yes: true, no: false, "1": true, "0": false, y: true, n: false };

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

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
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
    return t === FAIL ? FAIL : t.trim();
  },
  uppercase: (v) => {
    const t = asText(v);
    return t === FAIL ? FAIL : t.toUpperCase();
  },
  lowercase: (v) => {
    const t = asText(v);
    return t === FAIL ? FAIL : t.toLowerCase();
  },
  string: (v) => {
    if (typeof v === "string") return v;
    if (v === null) return null;
    const t = asText(v);
    return t === FAIL ? JSON.stringify(v) : t;
  },
  number: (v) => {
    if (typeof v === "number") return Number.isFinite(v) ? v : FAIL;
    if (typeof v !== "string") return FAIL;
    const t = v.trim();
    if (!DECIMAL.test(t)) return FAIL;
    const n = Number(t);
    return Number.isFinite(n) ? n : FAIL;
  },
  integer: (v) => {
    let n: number;
    if (typeof v === "number") n = v;
    else if (typeof v === "string") {
      const t = v.trim();
      if (!DECIMAL.test(t)) return FAIL;
      n = Number(t);
    } else return FAIL;
    return Number.isSafeInteger(n) ? n : FAIL;
  },
  boolean: (v) => {
    if (typeof v === "boolean") return v;
    if (typeof v === "number") return v === 1 ? true : v === 0 ? false : FAIL;
    if (typeof v !== "string") return FAIL;
    const b = BOOLEANS[v.trim().toLowerCase()];
    return b === undefined ? FAIL : b;
  },
  date: (v) => {
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
