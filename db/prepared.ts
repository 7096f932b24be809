import { Column, is, SQL } from "drizzle-orm";
import type { Preparable, PreparedRead, Reader } from "./client";

export type Row = Record<string, unknown>;
/** What Drizzle's prepared queries hold (internal to Drizzle; read only if it is there, else the public `execute`). */
export interface PreparedInternals {
  fields?: { path: string[]; field: unknown }[];
  joinsNotNullableMap?: Record<string, boolean>;
  customResultMapper?: unknown;
}

/**
 * The rows of a prepared select as objects, mapped by a function built once
 * for its columns (Drizzle's own mapping walks each column's path and type
 * checks on every row: a few microseconds a statement on the hot reads).
 * Null when the query is not a plain select this can map exactly as Drizzle
 * does: no nullable join, no custom mapper.
 */
export function rowMapper(q: PreparedInternals): ((values: unknown[]) => Row) | null {
  if (!q.fields || q.customResultMapper) return null;
  if (q.joinsNotNullableMap && Object.values(q.joinsNotNullableMap).some((notNull) => !notNull)) return null;
  const columns = q.fields.map(({ path, field }) => {
    // Drizzle keeps an SQL field's decoder (from mapWith) on `decoder`; it is not in its typings.
    const decoder: { mapFromDriverValue(v: unknown): unknown } | null = is(field, Column)
      ? field
      : is(field, SQL)
        ? (field as unknown as { decoder: { mapFromDriverValue(v: unknown): unknown } }).decoder
        : null;
    return { path, decoder };
  });
  if (columns.some((c) => c.decoder === null || c.path.length > 2)) return null;
  return (values) => {
    const out: Row = {};
    for (let i = 0; i < columns.length; i++) {
      const { path, decoder } = columns[i]!;
      const raw = values[i];
      const value = raw === null ? null : decoder!.mapFromDriverValue(raw);
      if (path.length === 1) out[path[0]!] = value;
      else ((out[path[0]!] ??= {}) as Row)[path[1]!] = value;
    }
    return out;
  };
}

export function preparedReads(prepare: (q: Preparable, name: string) => (values?: Record<string, unknown>) => unknown, read: Reader) {
  const cache = new Map<string, (values?: Record<string, unknown>) => unknown>();
  return <Q extends Preparable>(name: string, build: (r: Reader) => Q): PreparedRead<Q> => {
    let run = cache.get(name);
    if (!run) {
      run = prepare(build(read), name);
      cache.set(name, run);
    }
    return run as PreparedRead<Q>;
  };
}

