import type { RowError } from "../domain/runs";
import { type FieldMapping, type Transform } from "../services/pipelines/shapes";
import { describeFailure, FAIL, TRANSFORM_FNS, type TransformFn } from "./transforms";
import type { SourceRecord } from "./types";

/**
 * A pipeline's field mappings, compiled once per file into a row function.
 * Rules (docs/decisions/engine.md): a source value that is missing or the
 * empty string is absent (the target is left out, so the schema's `required`
 * catches it); null is kept; transforms run only on present values; a
 * transform that cannot convert a value leaves the target out and records a
 * field error for the row.
 */
export interface CompiledMapping {
  /** Target columns in output order (the CSV/XML writers' header). */
  readonly columns: readonly string[];
  /** Maps one record; pushes one error per failed transform onto `errors`. */
  map(record: SourceRecord, rowIndex: number, errors: RowError[]): Record<string, unknown>;
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
}

export function compileMapping(opts: CompileMappingOptions): CompiledMapping {
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
  const n = steps.length;
  // `__proto__` as a target would set the row's prototype instead of a column.
  const hasProtoTarget = steps.some((s) => s.target === "__proto__");

  function map(record: SourceRecord, rowIndex: number, errors: RowError[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const s = steps[i]!;
      let v: unknown;
      if (s.kind === SOURCED) {
        v = s.guarded ? read(record, s.source, true) : record[s.source];
      } else if (s.kind === STATIC) {
        v = s.value;
        if (v === undefined) continue;
        if (hasProtoTarget && s.target === "__proto__") Object.defineProperty(out, s.target, { value: v, enumerable: true, writable: true, configurable: true });
        else out[s.target] = v;
        continue;
      } else {
        let joined: string | undefined;
        const srcs = s.sources;
        for (let j = 0; j < srcs.length; j++) {
          const p = read(record, srcs[j]!, s.guardedSources[j]!);
          if (p === undefined || p === null || p === "") continue;
          const t = text(p);
          if (t === "") continue;
          joined = joined === undefined ? t : joined + s.delimiter + t;
        }
        v = joined;
      }
      if (v === undefined || v === "") continue;
      if (s.fn !== null && v !== null) {
        const r = s.fn(v);
        if (r === FAIL) {
          errors.push({ rowIndex, field: s.target, message: describeFailure(s.transform!, v) });
          continue;
        }
        if (r === "") continue;
        v = r;
      }
      if (hasProtoTarget && s.target === "__proto__") Object.defineProperty(out, s.target, { value: v, enumerable: true, writable: true, configurable: true });
      else out[s.target] = v;
    }
    return out;
  }

  return { columns: steps.map((s) => s.target), map };
}

/** The schema's property names in declaration order. */
export function schemaProperties(definition: Record<string, unknown>): string[] {
  const props = definition.properties;
  return props !== null && typeof props === "object" && !Array.isArray(props) ? Object.keys(props) : [];
}
