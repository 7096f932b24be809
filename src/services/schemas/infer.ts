import { fullFormats } from "ajv-formats/dist/formats";

/**
 * Drafting a row schema from sample values (docs/decisions/preview.md,
 * "Schema inference"). Pure: column statistics in, JSON Schema out. A type
 * is chosen only when every non-empty value of the column passes it under
 * the engine's own validation (ajv with type coercion and ajv-formats), so
 * the sample itself validates against the draft.
 */

/** Distinct values remembered per column; past this a column is not low-cardinality and its distinct count is not reported. */
const MAX_TRACKED = 1000;
/** An `enum` is suggested for plain text with at most this many distinct values... */
export const ENUM_MAX_VALUES = 10;
/** ...seen in at least this many non-empty cells, each value on average at least twice. */
export const ENUM_MIN_VALUES = 10;
const EXAMPLES = 3;
const EXAMPLE_CHARS = 100;

export const INFERRED_TYPES = ["integer", "number", "boolean", "date", "date-time", "email", "uri", "string"] as const;
export type InferredType = (typeof INFERRED_TYPES)[number];

type Check = (v: string) => boolean;
const fmt = (name: "date" | "date-time" | "email" | "uri"): Check => {
  const f = fullFormats[name] as RegExp | ((s: string) => boolean) | { validate: RegExp | ((s: string) => boolean) };
  const v = typeof f === "object" && "validate" in f ? f.validate : f;
  return typeof v === "function" ? v : (s) => v.test(s);
};
const INTEGER = /^-?(0|[1-9]\d{0,14})$/;
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$/;

/** Text checks, most specific first; a column takes the first that all its values pass. */
const TEXT_CHECKS: [Exclude<InferredType, "string">, Check][] = [
  ["integer", (v) => INTEGER.test(v)],
  ["number", (v) => NUMBER.test(v) && Number.isFinite(Number(v))],
  ["boolean", (v) => v === "true" || v === "false"],
  ["date", fmt("date")],
  ["date-time", fmt("date-time")],
  ["email", fmt("email")],
  ["uri", fmt("uri")],
];

export interface ColumnEvidence {
  /** Non-empty cells. */
  values: number;
  /** Cells missing, empty text or null. */
  empties: number;
  /** Distinct non-empty values; null past 1000. */
  distinct: number | null;
  examples: string[];
}

/** Running statistics of one source column. */
export class ColumnStats {
  values = 0;
  empties = 0;
  maxLength = 0;
  /** Types still possible for every value seen. */
  private possible = new Set<InferredType>(INFERRED_TYPES);
  /** A value no type here describes (an object or array from JSON or XML). */
  nested = false;
  private seen: Set<string> | null = new Set();
  readonly examples: string[] = [];

  constructor(readonly source: string) {}

  add(value: unknown): void {
    if (value === undefined || value === null || value === "") {
      this.empties++;
      return;
    }
    this.values++;
    if (typeof value === "object") {
      this.nested = true;
      return;
    }
    const text = String(value);
    if (text.length > this.maxLength) this.maxLength = text.length;
    if (this.seen) {
      if (!this.seen.has(text)) {
        if (this.examples.length < EXAMPLES) this.examples.push(text.length > EXAMPLE_CHARS ? `${text.slice(0, EXAMPLE_CHARS)}…` : text);
        this.seen.add(text);
        if (this.seen.size > MAX_TRACKED) this.seen = null;
      }
    }
    if (typeof value === "number") {
      if (!Number.isInteger(value)) this.possible.delete("integer");
      for (const t of ["boolean", "date", "date-time", "email", "uri"] as const) this.possible.delete(t);
      return;
    }
    if (typeof value === "boolean") {
      for (const t of ["integer", "number", "date", "date-time", "email", "uri"] as const) this.possible.delete(t);
      return;
    }
    for (const [t, check] of TEXT_CHECKS) if (this.possible.has(t) && !check(text)) this.possible.delete(t);
  }

  /** The most specific type every value passes (string when none does, or when the column was always empty). */
  type(): InferredType {
    if (this.values === 0) return "string";
    for (const t of INFERRED_TYPES) if (this.possible.has(t)) return t;
    return "string";
  }

  distinctValues(): string[] | null {
    return this.seen ? [...this.seen] : null;
  }

  evidence(): ColumnEvidence {
    return { values: this.values, empties: this.empties, distinct: this.seen ? this.seen.size : null, examples: this.examples };
  }
}

/** A target name for a source column: lower-case words joined by `_` (`Order ID` -> `order_id`), unique among `taken`. */
export function targetName(source: string, taken: Set<string>, position: number): string {
  let base = source
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64);
  if (base === "") base = `column_${position + 1}`;
  if (/^[0-9]/.test(base)) base = `c_${base}`;
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
  taken.add(name);
  return name;
}

export interface InferredColumn {
  source: string;
  target: string;
  type: InferredType | null;
  required: boolean;
  enum: string[] | null;
  maxLength: number | null;
  evidence: ColumnEvidence;
}

export interface Inferred {
  definition: Record<string, unknown>;
  fieldMappings: { source: string; target: string }[];
  columns: InferredColumn[];
}

/** The draft for `rows` records described by `stats` (in column order). */
export function draftSchema(stats: readonly ColumnStats[], rows: number): Inferred {
  const taken = new Set<string>();
  const properties: Record<string, Record<string, unknown>> = {};
  const required: string[] = [];
  const columns: InferredColumn[] = stats.map((s, i) => {
    const target = targetName(s.source, taken, i);
    // Cells a record lacks altogether (JSON, ragged rows) are empties too.
    const empties = s.empties + Math.max(0, rows - s.values - s.empties);
    const evidence = { ...s.evidence(), empties };
    const type = s.nested ? null : s.type();
    const prop: Record<string, unknown> = {};
    if (type === "integer" || type === "number" || type === "boolean" || type === "string") prop.type = type;
    else if (type !== null) Object.assign(prop, { type: "string", format: type });
    let enumValues: string[] | null = null;
    let maxLength: number | null = null;
    if (type === "string") {
      const distinct = s.distinctValues();
      if (distinct && distinct.length <= ENUM_MAX_VALUES && s.values >= ENUM_MIN_VALUES && distinct.length * 2 <= s.values) {
        enumValues = distinct.sort();
        prop.enum = enumValues;
      }
    }
    if ((type === "string" || type === "email" || type === "uri") && s.values > 0) {
      maxLength = Math.max(1, s.maxLength);
      prop.maxLength = maxLength;
    }
    const isRequired = rows > 0 && empties === 0;
    if (isRequired) required.push(target);
    properties[target] = prop;
    return { source: s.source, target, type, required: isRequired, enum: enumValues, maxLength, evidence };
  });
  const definition: Record<string, unknown> = { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object", properties };
  if (required.length > 0) definition.required = required;
  return { definition, fieldMappings: columns.map((c) => ({ source: c.source, target: c.target })), columns };
}
