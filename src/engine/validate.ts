import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { RowError } from "../domain/runs";
import { preview } from "./transforms";
import type { SchemaRef } from "./types";

/**
 * Rows are checked against the pipeline's schema with ajv. Options
 * (docs/decisions/engine.md):
 * - coerceTypes: CSV, TSV, XLSX and XML give text, so "12" must satisfy
 *   `type: number`; the coerced value (12) is what the processed file holds.
 * - useDefaults: a property's `default` fills it when the row lacks it.
 * - allErrors + verbose: every bad field of a row is reported, with its value.
 * The draft follows `$schema` as when the schema was saved
 * (src/services/schemas/definition.ts).
 */
const OPTIONS = { strict: false, allErrors: true, verbose: true, coerceTypes: true, useDefaults: true, validateFormats: true } as const;
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

/** Compiled validators kept per (schema id, version); a worker sees few schemas, so a small LRU suffices. */
const CACHE_SIZE = 32;
const cache = new Map<string, RowValidator>();

export interface RowValidator {
  /**
   * Validates (and coerces, in place) one mapped row. On failure pushes the
   * row's errors onto `errors`, leaving out those on `skipFields` (targets whose
   * transform already failed, so "is required" would only repeat it).
   */
  check(row: Record<string, unknown>, rowIndex: number, errors: RowError[], skipFields?: ReadonlySet<string>): boolean;
}

/** The schema cannot be compiled: the run fails with this message. */
export class SchemaCompileError extends Error {
  override readonly name = "SchemaCompileError";
}

function unescape(seg: string): string {
  return seg.replace(/~1/g, "/").replace(/~0/g, "~");
}

function fieldOf(e: ErrorObject): string {
  const segs = e.instancePath === "" ? [] : e.instancePath.split("/").slice(1).map(unescape);
  const params = e.params as { missingProperty?: string; additionalProperty?: string };
  if (e.keyword === "required" && params.missingProperty !== undefined) segs.push(params.missingProperty);
  if (e.keyword === "additionalProperties" && params.additionalProperty !== undefined) segs.push(params.additionalProperty);
  if (segs.length === 0) return "(row)";
  return segs.map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");
}

function messageOf(e: ErrorObject): string {
  if (e.keyword === "required") return "is required";
  if (e.keyword === "additionalProperties") return "is not a property of the schema";
  const base = e.message ?? "is invalid";
  const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues;
  const detail = allowed ? ` (${allowed.map((v) => JSON.stringify(v)).join(", ")})` : "";
  return "data" in e ? `${base}${detail}, got ${preview(e.data)}` : `${base}${detail}`;
}

function compile(schema: SchemaRef): ValidateFunction {
  const declared = schema.definition.$schema;
  const draft07 = typeof declared === "string" && DRAFT_07.test(declared);
  // One instance per schema: a shared one would let one workspace's `$id`
  // clash with (or resolve against) another's.
  const ajv = draft07 ? new Ajv({ ...OPTIONS, validateSchema: false }) : new Ajv2020({ ...OPTIONS, validateSchema: false });
  addFormats(ajv);
  try {
    return ajv.compile(schema.definition);
  } catch (e) {
    throw new SchemaCompileError(`the schema ${schema.id} cannot be compiled: ${(e as Error).message}`);
  }
}

export function validatorFor(schema: SchemaRef): RowValidator {
  const key = `${schema.id}\u0000${schema.version}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const validate = compile(schema);
  const validator: RowValidator = {
    check(row, rowIndex, errors, skipFields) {
      if (validate(row)) return true;
      for (const e of validate.errors ?? []) {
        const field = fieldOf(e);
        if (skipFields?.has(field)) continue;
        errors.push({ inputRow: rowIndex + 1, field, message: messageOf(e) });
      }
      return false;
    },
  };
  cache.set(key, validator);
  if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return validator;
}

/** For tests: how many validators are cached. */
export function cachedValidators(): number {
  return cache.size;
}
