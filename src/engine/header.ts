import type { HeaderSummary } from "../domain/runs";
import type { FieldMapping, HeaderMatch } from "../domain/mappings";
import { type CompiledMapping, compileMapping, schemaProperties } from "./map";
import type { ProcessRequest } from "./types";

export type { HeaderSummary };

/**
 * The header diagnosis (docs/decisions/mappings.md, "Header"): before any
 * row is read, each source a mapping names is looked up in the file's
 * header under `headerMatch`, and renamed to the header's spelling, so the
 * row code (JavaScript or native) then reads columns by their exact names.
 * A source the header lacks is named, with the closest header names, in the
 * message the run fails with (unless `missingColumns` is 'proceed').
 */

export interface HeaderOptions {
  fieldMappings: readonly FieldMapping[];
  /** The schema's property names in order (the sources when `fieldMappings` is empty). */
  schemaProperties: readonly string[];
  /** The schema's required properties: with an empty `fieldMappings`, only those must be in the header. */
  required: readonly string[];
  columns: readonly string[];
  headerMatch?: HeaderMatch;
  missingColumns?: "fail" | "proceed";
}

export interface HeaderPlan {
  /** The mappings with each source spelled as in the header (the same array when nothing is renamed). */
  fieldMappings: readonly FieldMapping[];
  summary: HeaderSummary;
  /** Mapped sources the header lacks (whether the run fails for them or proceeds). */
  missing: readonly string[];
  /** The message the run fails with, or null. */
  problem: string | null;
}

/** Letters and digits only, lower case: `Order ID`, `order_id` and `ORDER-ID` are all `orderid`. */
export function normalizeName(name: string): string {
  return name.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
}

const keyOf = (name: string, match: HeaderMatch): string => (match === "exact" ? name : match === "case-insensitive" ? name.toLowerCase() : normalizeName(name));

/** Levenshtein distance (two rows of the table). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** `qty` in `quantity`: the letters of the shorter in order in the longer, from the same first letter (an abbreviation). */
function abbreviates(a: string, b: string): boolean {
  const [s, l] = a.length <= b.length ? [a, b] : [b, a];
  if (s.length < 2 || s[0] !== l[0]) return false;
  let i = 0;
  for (const c of l) if (c === s[i]) i++;
  return i === s.length;
}

/** Up to three header names closest to `source`: equal once normalized first, then by edit distance (or an abbreviation). */
export function closestColumns(source: string, columns: readonly string[]): string[] {
  const n = normalizeName(source);
  const scored: { name: string; score: number }[] = [];
  for (const c of columns) {
    const m = normalizeName(c);
    if (m === "" || n === "") continue;
    if (m === n) {
      scored.push({ name: c, score: -1 });
      continue;
    }
    const d = editDistance(n, m);
    if (d <= Math.max(1, Math.floor(Math.max(n.length, m.length) / 3))) scored.push({ name: c, score: d });
    else if (abbreviates(n, m)) scored.push({ name: c, score: Math.max(n.length, m.length) });
  }
  return scored
    .sort((x, y) => x.score - y.score)
    .slice(0, 3)
    .map((s) => s.name);
}

const quoted = (s: string) => `\`${s}\``;
const MAX_LISTED = 20;

const plans = new Map<string, HeaderPlan>();

export function planHeader(o: HeaderOptions): HeaderPlan {
  const key = JSON.stringify([o.fieldMappings, o.schemaProperties, o.required, o.columns, o.headerMatch, o.missingColumns]);
  let plan = plans.get(key);
  if (!plan) {
    plan = compute(o);
    if (plans.size >= 16) plans.delete(plans.keys().next().value!);
    plans.set(key, plan);
  }
  return plan;
}

function compute(o: HeaderOptions): HeaderPlan {
  const match = o.headerMatch ?? "exact";
  const implicit = o.fieldMappings.length === 0;
  const list: readonly FieldMapping[] = implicit ? o.schemaProperties.map((p) => ({ target: p, source: p })) : o.fieldMappings;
  const byKey = new Map<string, string[]>();
  for (const c of o.columns) {
    const k = keyOf(c, match);
    const names = byKey.get(k);
    if (names) names.push(c);
    else byKey.set(k, [c]);
  }
  const exact = new Set(o.columns);
  const used = new Set<string>();
  const missing: string[] = [];
  const ambiguous: string[] = [];
  const matched: Record<string, string> = {};
  const resolve = (source: string, mustExist: boolean): string => {
    // `column_12` past the header names an extra field of longer rows (src/engine/parse/records.ts), not a header column.
    const extra = /^column_([1-9][0-9]{0,8})$/.exec(source);
    if (extra && Number(extra[1]) > o.columns.length) return source;
    if (exact.has(source)) {
      used.add(source);
      return source;
    }
    const names = byKey.get(keyOf(source, match)) ?? [];
    if (names.length === 1) {
      used.add(names[0]!);
      matched[source] = names[0]!;
      return names[0]!;
    }
    if (names.length > 1) ambiguous.push(`${quoted(source)} matches ${names.length} header columns (${names.map(quoted).join(", ")}) under headerMatch '${match}'`);
    else if (mustExist && !missing.includes(source)) missing.push(source);
    return source;
  };
  let renamed = false;
  const resolved = list.map((m) => {
    if (m.source !== undefined) {
      const source = resolve(m.source, !implicit || o.required.includes(m.target));
      if (source === m.source) return m;
      renamed = true;
      return { ...m, source };
    }
    if (m.sources !== undefined) {
      const sources = m.sources.map((s) => resolve(s, true));
      if (sources.every((s, i) => s === m.sources![i])) return m;
      renamed = true;
      return { ...m, sources };
    }
    return m;
  });

  const summary: HeaderSummary = { unusedColumns: o.columns.filter((c) => !used.has(c)) };
  if (Object.keys(matched).length > 0) summary.matchedColumns = matched;
  const proceed = o.missingColumns === "proceed";
  if (missing.length > 0 && proceed) summary.missingColumns = missing;
  const problems = [...ambiguous];
  if (missing.length > 0 && !proceed) {
    for (const s of missing) {
      const close = closestColumns(s, o.columns);
      problems.push(`${quoted(s)} not in the header; ${close.length > 0 ? `closest: ${close.map(quoted).join(", ")}` : "no column is close"}`);
    }
  }
  let problem: string | null = null;
  if (problems.length > 0) {
    const shown = o.columns.slice(0, MAX_LISTED).map(quoted).join(", ") + (o.columns.length > MAX_LISTED ? `, and ${o.columns.length - MAX_LISTED} more` : "");
    const fixes =
      missing.length > 0 && !proceed
        ? "Rename the column in the file or the mapping's source, set mappings.options.headerMatch to 'case-insensitive' or 'normalized', or set mappings.options.missingColumns to 'proceed' to read the file without it."
        : "Rename one of the columns, or set mappings.options.headerMatch to 'exact'.";
    problem = `The file's header does not fit the mapping, so no row was read: ${problems.join("; ")}. The header is ${shown}. ${fixes}`;
  }
  return { fieldMappings: renamed ? resolved : o.fieldMappings, summary, missing, problem };
}

/** What `pumpRows` (src/engine/process.ts) does with a header: asks for the mapping once, before the first row. */
export interface HeaderStep {
  /** The header's column names, once read (before the first batch). */
  columns(): readonly string[];
  /** The mapping for this header, or the message the run fails with. */
  plan(columns: readonly string[]): CompiledMapping | string;
}

const requiredOf = (definition: Record<string, unknown>): string[] =>
  Array.isArray(definition.required) ? definition.required.filter((r): r is string => typeof r === "string") : [];

/** The request's mapping with its options (emptyCells), for `fieldMappings` (the pipeline's, or as planHeader spelled them). */
export function mappingFor(req: ProcessRequest, fieldMappings: readonly FieldMapping[] = req.mappings.fieldMappings): CompiledMapping {
  return compileMapping({ fieldMappings, schemaProperties: schemaProperties(req.schema.definition), emptyCells: req.mappings.options.emptyCells });
}

/** The header diagnosis of `req`'s mapping against `columns`. */
export function headerPlanFor(req: ProcessRequest, columns: readonly string[]): HeaderPlan {
  const { fieldMappings, options } = req.mappings;
  const def = req.schema.definition;
  return planHeader({ fieldMappings, schemaProperties: schemaProperties(def), required: requiredOf(def), columns, headerMatch: options.headerMatch, missingColumns: options.missingColumns });
}

/** Whether the input names its columns in a header row (CSV, TSV, XLSX with headerRow on): only those get the header diagnosis. */
export function hasHeader(req: ProcessRequest, format: string): boolean {
  return (format === "csv" || format === "tsv" || format === "xlsx") && req.mappings.options.headerRow !== false;
}

/** The header step of `pumpRows` for `req`: `onSummary` gets what the run's metadata says of the header. */
export function headerStep(req: ProcessRequest, columns: () => readonly string[], onSummary: (s: HeaderSummary) => void): HeaderStep {
  return {
    columns,
    plan(cols) {
      const plan = headerPlanFor(req, cols);
      if (plan.problem !== null) return plan.problem;
      onSummary(plan.summary);
      return mappingFor(req, plan.fieldMappings);
    },
  };
}

