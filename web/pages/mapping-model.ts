import type { Pipeline } from "../types";

/**
 * The mapping editor's state, one row per target field, and its conversion
 * to and from a pipeline's `mappings` (the same shape the API takes).
 * Unknown option and validation members are kept as they were.
 */
export type Mappings = Pipeline["mappings"];
export type FieldMapping = Mappings["fieldMappings"][number];
export type TargetMode = "none" | "column" | "static" | "aggregated";

export interface TargetRow {
  target: string;
  mode: TargetMode;
  source: string;
  value: string;
  sources: string[];
  delimiter: string;
  transform: string;
  /** Chosen by the person (auto-pairing leaves it alone). */
  touched: boolean;
}

export interface EditorOptions {
  delimiter: string;
  headerRow: boolean;
  encoding: string;
  sheet: string;
  recordPath: string;
  onInvalidRow: string;
  outputFormat: string;
}

export const TRANSFORMS = ["trim", "uppercase", "lowercase", "number", "integer", "boolean", "date", "datetime", "string"] as const;
export const ENCODINGS = ["utf-8", "utf-16le", "latin1", "windows-1252"] as const;
export const ON_INVALID_ROW = ["fail", "skip", "quarantine"] as const;

const blankRow = (target: string): TargetRow => ({ target, mode: "none", source: "", value: "", sources: [], delimiter: "", transform: "", touched: false });

/** The schema's properties as targets, plus any target the saved mappings name that the schema lacks. */
export function targetsOf(definition: unknown): { name: string; required: boolean; type: string }[] {
  const d = (definition ?? {}) as { properties?: Record<string, { type?: unknown; format?: unknown }>; required?: unknown };
  const required = new Set(Array.isArray(d.required) ? (d.required as string[]) : []);
  return Object.entries(d.properties ?? {}).map(([name, p]) => ({
    name,
    required: required.has(name),
    type: [p?.type, p?.format].filter((x) => typeof x === "string").join(", "),
  }));
}

export function rowsFrom(targets: string[], mappings: Mappings | undefined): TargetRow[] {
  const byTarget = new Map((mappings?.fieldMappings ?? []).map((m) => [m.target, m]));
  const names = [...targets, ...[...byTarget.keys()].filter((t) => !targets.includes(t))];
  return names.map((target) => {
    const m = byTarget.get(target);
    if (!m) return blankRow(target);
    const row: TargetRow = { ...blankRow(target), touched: true, transform: m.transform ?? "" };
    if (m.sources) return { ...row, mode: "aggregated", sources: m.sources, delimiter: m.delimiter ?? "" };
    if (m.source !== undefined) return { ...row, mode: "column", source: m.source };
    return { ...row, mode: "static", value: m.value ?? "" };
  });
}

export function optionsFrom(mappings: Mappings | undefined): EditorOptions {
  const o = (mappings?.options ?? {}) as Record<string, unknown>;
  const v = (mappings?.validations ?? {}) as Record<string, unknown>;
  const text = (x: unknown) => (typeof x === "string" ? x : "");
  return {
    delimiter: text(o.delimiter),
    headerRow: o.headerRow !== false,
    encoding: text(o.encoding),
    sheet: text(o.sheet),
    recordPath: text(o.recordPath),
    onInvalidRow: text(v.onInvalidRow),
    outputFormat: text(o.outputFormat),
  };
}

/** The mappings the rows and options make, over the saved ones (their other members kept). */
export function toMappings(rows: TargetRow[], opts: EditorOptions, base: Mappings | undefined): Mappings {
  const fieldMappings: FieldMapping[] = [];
  for (const r of rows) {
    const transform = r.transform ? { transform: r.transform as FieldMapping["transform"] } : {};
    if (r.mode === "column" && r.source) fieldMappings.push({ target: r.target, source: r.source, ...transform });
    else if (r.mode === "static") fieldMappings.push({ target: r.target, value: r.value, ...transform });
    else if (r.mode === "aggregated" && r.sources.length > 0)
      fieldMappings.push({ target: r.target, sources: r.sources, ...(r.delimiter ? { delimiter: r.delimiter } : {}), ...transform });
  }
  const options: Record<string, unknown> = { ...(base?.options ?? {}) };
  const set = (key: string, value: unknown, keep: boolean) => {
    if (keep) options[key] = value;
    else delete options[key];
  };
  set("delimiter", opts.delimiter, opts.delimiter !== "");
  set("headerRow", false, !opts.headerRow);
  set("encoding", opts.encoding, opts.encoding !== "");
  set("sheet", opts.sheet, opts.sheet !== "");
  set("recordPath", opts.recordPath, opts.recordPath !== "");
  set("outputFormat", opts.outputFormat, opts.outputFormat !== "");
  const validations: Record<string, unknown> = { ...(base?.validations ?? {}) };
  if (opts.onInvalidRow) validations.onInvalidRow = opts.onInvalidRow;
  else delete validations.onInvalidRow;
  return { fieldMappings, options, validations } as Mappings;
}

/** Case, spaces and punctuation ignored: `Order ID`, `order_id` and `orderId` are one name. */
export const normalized = (name: string) => name.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");

/**
 * Pairs each target nobody has chosen for with a source column: first an
 * exact name, then a normalized one; each column is used once.
 */
export function autoPair(rows: TargetRow[], columns: string[]): TargetRow[] {
  const used = new Set(rows.filter((r) => r.mode === "column").map((r) => r.source));
  const open = (r: TargetRow) => !r.touched && r.mode === "none";
  const pass = (match: (target: string, column: string) => boolean) => (r: TargetRow) => {
    if (!open(r)) return r;
    const column = columns.find((c) => !used.has(c) && match(r.target, c));
    if (column === undefined) return r;
    used.add(column);
    return { ...r, mode: "column" as const, source: column };
  };
  return rows.map(pass((t, c) => t === c)).map(pass((t, c) => normalized(t) === normalized(c)));
}
