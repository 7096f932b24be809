import type { RowError } from "../domain/runs";
import { type EmptyCells, type FieldMapping, type Transform } from "../domain/mappings";
import { describeFailure, FAIL, TRANSFORM_FNS, type TransformFn } from "./transforms";
import { positionalName } from "./parse/records";
import type { FieldRow, SourceRecord } from "./types";

/**
 * A pipeline's field mappings, compiled once per file into a row function.
 * Rules (docs/decisions/engine.md): a source value that is missing is
 * absent; an empty one (the empty string) is absent too unless
 * `emptyCells` says it becomes "" or null (docs/decisions/mappings.md);
 * null is kept; transforms run only on non-empty values; a
 * transform that cannot convert a value leaves the target out and records a
 * field error for the row.
 */
export interface CompiledMapping {
  /** Target columns in output order (the CSV/XML writers' header). */
  readonly columns: readonly string[];
  /** Maps one record; pushes one error per failed transform onto `errors`. */
  map(record: SourceRecord, rowIndex: number, errors: RowError[]): Record<string, unknown>;
  /**
   * The same mapping for CSV/TSV field arrays under `columns` (the header):
   * sources are read by position, so no record object is built per row. A
   * row maps exactly as the record the parser would have built from it.
   */
  forFields(columns: readonly string[]): (row: FieldRow, rowIndex: number, errors: RowError[]) => Record<string, unknown>;
}

/** The pipeline's mapping cannot be applied at all (e.g. a static value its transform refuses). */
export class MappingConfigError extends Error {
  override readonly name = "MappingConfigError";
}

const SOURCED = 0;
const STATIC = 1;
const AGGREGATED = 2;

interface Step {
  kind: typeof SOURCED | typeof STATIC | typeof AGGREGATED;
  target: string;
  source: string;
  /** The source name shadows something on Object.prototype: read own properties only. */
  guarded: boolean;
  sources: string[];
  guardedSources: boolean[];
  delimiter: string;
  value: unknown;
  transform: Transform | undefined;
  fn: TransformFn | null;
}

const shadowsPrototype = (name: string) => name in Object.prototype;

function read(record: SourceRecord, name: string, guarded: boolean): unknown {
  return guarded ? (Object.hasOwn(record, name) ? record[name] : undefined) : record[name];
}

function text(v: unknown): string {
  return typeof v === "string" ? v : v !== null && typeof v === "object" && !(v instanceof Date) ? JSON.stringify(v) : v instanceof Date ? v.toISOString() : String(v);
}

export interface CompileMappingOptions {
  fieldMappings: readonly FieldMapping[];
  /** The schema's property names in order: the columns taken when `fieldMappings` is empty. */
  schemaProperties: readonly string[];
  /** What an empty cell (or a transform's empty result) becomes: absent (the default), "" or null. */
  emptyCells?: EmptyCells;
}

/** Compiled mappings kept per thread: a file read in stripes compiles its row code once, and every stripe runs the same (already optimised) function. */
const COMPILED = new Map<string, CompiledMapping>();
const MAX_COMPILED = 16;

export function compileMapping(opts: CompileMappingOptions): CompiledMapping {
  const key = JSON.stringify([opts.fieldMappings, opts.schemaProperties, opts.emptyCells ?? "absent"]);
  let compiled = COMPILED.get(key);
  if (!compiled) {
    compiled = compileUncached(opts);
    if (COMPILED.size >= MAX_COMPILED) COMPILED.delete(COMPILED.keys().next().value!);
    COMPILED.set(key, compiled);
  }
  return compiled;
}

function compileUncached(opts: CompileMappingOptions): CompiledMapping {
  const list: readonly FieldMapping[] = opts.fieldMappings.length > 0 ? opts.fieldMappings : opts.schemaProperties.map((p) => ({ target: p, source: p }));
  const steps: Step[] = list.map((m, i) => {
    const fn = m.transform ? TRANSFORM_FNS[m.transform] : null;
    const step: Step = {
      kind: SOURCED,
      target: m.target,
      source: m.source ?? "",
      guarded: m.source !== undefined && shadowsPrototype(m.source),
      sources: m.sources ?? [],
      guardedSources: (m.sources ?? []).map(shadowsPrototype),
      delimiter: m.delimiter ?? " ",
      value: undefined,
      transform: m.transform,
      fn,
    };
    if (m.sources !== undefined) step.kind = AGGREGATED;
    else if (m.source === undefined) {
      step.kind = STATIC;
      let v: unknown = m.value === "" ? undefined : m.value;
      if (v !== undefined && fn) {
        const r = fn(v);
        if (r === FAIL) {
          throw new MappingConfigError(`mappings.fieldMappings[${i}] (target '${m.target}'): the static value cannot be used: ${describeFailure(m.transform!, v)}`);
        }
        v = r === "" ? undefined : r;
      }
      step.value = v;
    }
    return step;
  });
  const empty = EMPTY_LITERAL[opts.emptyCells ?? "absent"];
  const map = generate(steps, recordReader, empty);
  const byColumns = new Map<string, CompiledMapping["forFields"] extends (c: never) => infer F ? F : never>();
  return {
    columns: steps.map((s) => s.target),
    map,
    forFields(columns) {
      const k = JSON.stringify(columns);
      let f = byColumns.get(k);
      if (!f) {
        f = generate(steps, fieldReader(columns), empty) as never;
        if (byColumns.size >= MAX_COMPILED) byColumns.delete(byColumns.keys().next().value!);
        byColumns.set(k, f);
      }
      return f;
    },
  };
}

/** How the generated code reads a source: an expression for one name, and the function it may call. */
interface Reader {
  expr(name: string, guarded: boolean): string;
  /** `read(r, name)` for aggregated sources. */
  read(r: unknown, name: string, guarded: boolean): unknown;
}

const recordReader: Reader = {
  expr: (name, guarded) => (guarded ? `read(r, ${lit(name)}, true)` : `r[${lit(name)}]`),
  read: (r, name, guarded) => read(r as SourceRecord, name, guarded),
};

/**
 * Reads from field arrays as RecordBuilder would have filled the record:
 * the header column's position, and for a positional name (`column_12`)
 * past the header, that extra field when it is not empty (the builder writes
 * extras after the header's columns, so a non-empty one wins).
 */
function fieldReader(columns: readonly string[]): Reader {
  const at = new Map<string, number>();
  columns.forEach((c, i) => at.set(c, i));
  const extraAt = (name: string): number => {
    const m = /^column_([1-9][0-9]{0,8})$/.exec(name);
    const i = m ? Number(m[1]) - 1 : -1;
    return i >= columns.length && positionalName(i + 1) === name ? i : -1;
  };
  return {
    expr(name) {
      const i = at.get(name) ?? -1;
      const e = extraAt(name);
      if (e < 0) return i < 0 ? "undefined" : `r[${i}]`;
      const extra = `r[${e}]`;
      return i < 0 ? `(r.length > ${e} ? ${extra} : undefined)` : `(r.length > ${e} && ${extra} !== "" && ${extra} !== null && ${extra} !== undefined ? ${extra} : r[${i}])`;
    },
    read(r, name) {
      const row = r as FieldRow;
      const i = at.get(name) ?? -1;
      const e = extraAt(name);
      if (e >= 0 && row.length > e) {
        const v = row[e];
        if (v !== "" && v !== null && v !== undefined) return v;
      }
      return i < 0 ? undefined : row[i];
    },
  };
}

const lit = (s: string) => JSON.stringify(s);

/** What the generated code writes for an empty cell: nothing (absent), or this literal. */
const EMPTY_LITERAL: Record<EmptyCells, string | null> = { absent: null, "empty-string": '""', null: "null" };

/**
 * The row function is generated as JavaScript source, as ajv does for
 * validators: constant property names and one straight-line block per
 * target make the per-row work a few inline-cached loads and one object,
 * about three times faster than a loop over the steps. Names enter the source
 * only as JSON string literals; transforms and values are passed in, never
 * written into it.
 */
function generate(steps: Step[], reader: Reader, empty: string | null): CompiledMapping["map"] {
  const fns: (TransformFn | null)[] = steps.map((s) => s.fn);
  const values: unknown[] = steps.map((s) => s.value);
  const fail = (i: number, v: unknown) => describeFailure(steps[i]!.transform!, v);
  // Joined non-empty values; "" when every source present is empty (an empty cell), undefined when none is present.
  const aggregate = (i: number, record: SourceRecord): string | undefined => {
    const s = steps[i]!;
    let joined: string | undefined;
    let present = false;
    for (let j = 0; j < s.sources.length; j++) {
      const p = reader.read(record, s.sources[j]!, s.guardedSources[j]!);
      if (p === undefined || p === null) continue;
      present = true;
      if (p === "") continue;
      const t = text(p);
      if (t === "") continue;
      joined = joined === undefined ? t : joined + s.delimiter + t;
    }
    return joined ?? (present ? "" : undefined);
  };
  const setOwn = (o: Record<string, unknown>, k: string, v: unknown) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });

  const body: string[] = ["const o = {};", "let v, x;"];
  steps.forEach((s, i) => {
    const t = lit(s.target);
    // `__proto__` as a target would set the row's prototype instead of a column.
    const assign = (val: string) => (s.target === "__proto__" ? `setOwn(o, ${t}, ${val});` : `o[${t}] = ${val};`);
    if (s.kind === STATIC) {
      if (s.value !== undefined) body.push(assign(`values[${i}]`));
      return;
    }
    if (s.kind === AGGREGATED) body.push(`v = aggregate(${i}, r);`);
    else body.push(`v = ${reader.expr(s.source, s.guarded)};`);
    const whenEmpty = empty === null ? "" : ` else ${assign(empty)}`;
    if (s.fn === null) {
      body.push(empty === null ? `if (v !== undefined && v !== "") ${assign("v")}` : `if (v !== undefined) ${assign(`v === "" ? ${empty} : v`)}`);
    } else {
      body.push(
        `if (v !== undefined && v !== "") {`,
        `  if (v === null) ${assign("v")}`,
        `  else {`,
        `    x = fns[${i}](v);`,
        `    if (x === FAIL) errors.push({ inputRow: rowIndex + 1, field: ${t}, message: fail(${i}, v) });`,
        `    else if (x !== "") ${assign("x")}${whenEmpty}`,
        `  }`,
        `}${empty === null ? "" : ` else if (v === "") ${assign(empty)}`}`,
      );
    }
  });
  body.push("return o;");
  const factory = new Function("fns", "values", "FAIL", "fail", "aggregate", "read", "setOwn", `return function map(r, rowIndex, errors) {\n${body.join("\n")}\n};`);
  return factory(fns, values, FAIL, fail, aggregate, read, setOwn) as CompiledMapping["map"];
}

/** The schema's property names in declaration order. */
export function schemaProperties(definition: Record<string, unknown>): string[] {
  const props = definition.properties;
  return props !== null && typeof props === "object" && !Array.isArray(props) ? Object.keys(props) : [];
}
