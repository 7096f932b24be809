import { dlopen, FFIType } from "bun:ffi";
import { existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type FieldMapping } from "../../domain/mappings";
import { FAIL, TRANSFORM_FNS } from "../transforms";

/**
 * The native row loop (rowloop.c; docs/decisions/native-row-loop.md): the
 * library, loaded once per thread, and the plan it follows, compiled from a
 * pipeline's mapping, its schema and the file's header. The plan exists only
 * for mappings and schemas whose every rule the C code applies exactly as the
 * JavaScript path does; for anything else `nativePlan` answers null and the
 * file is read by the JavaScript path alone.
 */

/** Where `npm ci` builds the library (scripts/build-native.sh). */
export const LIBRARY_PATH = fileURLToPath(new URL("../../../build/native/librowloop.so", import.meta.url));
const SOURCE_PATH = fileURLToPath(new URL("./rowloop.c", import.meta.url));

// The statuses and the layouts of io[], plan[] and nums[] are rowloop.c's enums: the two files change together
// (test/engine.native-enums.test.ts fails on any mismatch).
export const ST_END = 0;
export const ST_FULL = 1;
export const ST_FALLBACK = 2;
export const ST_BAIL = 3;
export const IO_POS = 0;
export const IO_END = 1;
export const IO_OUT = 2;
export const IO_OUTCAP = 3;
export const IO_ROWS = 4;
export const IO_WROTE = 5;
export const IO_STATUS = 6;
export const IO_NF = 7;
export const IO_ROWEND = 8;
export const IO_SKIPPED = 9;
export const IO_FIELDS = 16;
export const MAX_FIELDS = 1024;

const P_WIDTH = 0;
const P_DELIM = 1;
const P_QUOTE = 2;
const P_CRLF = 3;
const P_TARGETS = 4;
const P_FIXED = 5;
const P_HEADER = 8;
const T_KIND = 0;
const T_FIELD = 1;
const T_TRANSFORM = 2;
const T_TYPE = 3;
const T_FLAGS = 4;
const T_KEY_OFF = 5;
const T_KEY_LEN = 6;
const T_STATIC_OFF = 7;
const T_STATIC_LEN = 8;
const T_MIN_LEN = 9;
const T_MAX_LEN = 10;
const T_ENUM_AT = 11;
const T_ENUM_COUNT = 12;
const PT_SIZE = 16;
const K_SOURCED = 0;
const K_STATIC = 1;
const TRANSFORMS: Record<string, number> = { trim: 1, uppercase: 2, lowercase: 3, number: 4, integer: 5, boolean: 6, date: 7, string: 8 };
const TYPES: Record<string, number> = { string: 1, number: 2, integer: 3, boolean: 4 };
const F_REQUIRED = 1;
const F_DEFAULT = 2;
const F_FORMAT_DATE = 4;
const F_MIN_LEN = 8;
const F_MAX_LEN = 16;
const F_MIN = 32;
const F_MAX = 64;
const F_EX_MIN = 128;
const F_EX_MAX = 256;
const F_ENUM = 512;

/** Every constant shared with rowloop.c, by its name there (test/engine.native-enums.test.ts compiles the C file and compares). */
export const SHARED_CONSTANTS: Readonly<Record<string, number>> = {
  ST_END, ST_FULL, ST_FALLBACK, ST_BAIL,
  IO_POS, IO_END, IO_OUT, IO_OUTCAP, IO_ROWS, IO_WROTE, IO_STATUS, IO_NF, IO_ROWEND, IO_SKIPPED, IO_FIELDS, MAX_FIELDS,
  P_WIDTH, P_DELIM, P_QUOTE, P_CRLF, P_TARGETS, P_FIXED, P_HEADER,
  T_KIND, T_FIELD, T_TRANSFORM, T_TYPE, T_FLAGS, T_KEY_OFF, T_KEY_LEN, T_STATIC_OFF, T_STATIC_LEN, T_MIN_LEN, T_MAX_LEN, T_ENUM_AT, T_ENUM_COUNT, PT_SIZE,
  K_SOURCED, K_STATIC,
  X_NONE: 0, X_TRIM: TRANSFORMS.trim!, X_UPPER: TRANSFORMS.uppercase!, X_LOWER: TRANSFORMS.lowercase!, X_NUMBER: TRANSFORMS.number!,
  X_INTEGER: TRANSFORMS.integer!, X_BOOLEAN: TRANSFORMS.boolean!, X_DATE: TRANSFORMS.date!, X_STRING: TRANSFORMS.string!,
  Y_ANY: 0, Y_STRING: TYPES.string!, Y_NUMBER: TYPES.number!, Y_INTEGER: TYPES.integer!, Y_BOOLEAN: TYPES.boolean!,
  F_REQUIRED, F_DEFAULT, F_FORMAT_DATE, F_MIN_LEN, F_MAX_LEN, F_MIN, F_MAX, F_EX_MIN, F_EX_MAX, F_ENUM,
};

export interface RowLoop {
  /** Rows of `input` from io[IO_POS] to io[IO_END] into `out`; answers the status (ST_*), details in `io`. */
  rows(input: Uint8Array, out: Uint8Array, io: Int32Array, plan: NativePlan): number;
}

let loaded: RowLoop | null | undefined;

/**
 * The library, or null when it is not built or `FPS_ENGINE_NATIVE=0` turns
 * it off (the JavaScript path then reads every file). The setting is read at
 * every stripe, so a test can compare both paths in one process.
 */
export function rowLoop(): RowLoop | null {
  if (process.env.FPS_ENGINE_NATIVE === "0") return null;
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (!existsSync(LIBRARY_PATH)) return loaded;
  // A library older than its source was built from other code: never run it (`npm run build:native` rebuilds it).
  if (statSync(LIBRARY_PATH).mtimeMs < statSync(SOURCE_PATH).mtimeMs) {
    console.warn(`${LIBRARY_PATH} is older than ${SOURCE_PATH}: the engine reads every file in JavaScript until \`npm run build:native\` rebuilds it`);
    return loaded;
  }
  try {
    const lib = dlopen(LIBRARY_PATH, {
      fps_rows: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    });
    const fn = lib.symbols.fps_rows;
    loaded = { rows: (input, out, io, p) => fn(input, out, io, p.plan, p.bytes, p.nums) };
  } catch (e) {
    console.warn(`${LIBRARY_PATH} cannot be loaded (${e instanceof Error ? e.message : String(e)}): the engine reads every file in JavaScript`);
    loaded = null;
  }
  return loaded;
}

export interface NativePlan {
  readonly plan: Int32Array;
  readonly bytes: Uint8Array;
  readonly nums: Float64Array;
}

export interface NativePlanInput {
  fieldMappings: readonly FieldMapping[];
  schema: Record<string, unknown>;
  /** The file's columns, as the JavaScript reader names them (src/engine/parse/records.ts, columnNames). */
  columns: readonly string[];
  delimiter: string;
  quote: string;
  newline: string;
  /** mappings.options.emptyCells: the C code writes empty cells as absent only; any other rule is left to JavaScript. */
  emptyCells?: "absent" | "empty-string" | "null";
}

const ANNOTATIONS = new Set(["title", "description", "$comment", "examples", "readOnly", "writeOnly", "deprecated"]);
const ROOT_KEYS = new Set([...ANNOTATIONS, "$schema", "$id", "type", "properties", "required", "additionalProperties"]);
const PROPERTY_KEYS = new Set([...ANNOTATIONS, "type", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "format", "default"]);
/** Names JavaScript orders before all others in an object (array indexes): the C code writes targets in mapping order only. */
const INDEX_LIKE = /^(?:0|[1-9][0-9]*)$/;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const isCount = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const singleByte = (s: string) => s.length === 1 && s.charCodeAt(0) < 128 && s !== "\n" && s !== "\r";

const cache = new Map<string, NativePlan | null>();

/**
 * The plan for a mapping, schema and header, or null when any part of them
 * is outside what rowloop.c applies exactly (the decision record lists what
 * it takes: sourced and static mappings, the transforms but `datetime`, and
 * schemas of typed properties with length, range, enum and `date` checks).
 */
export function nativePlan(input: NativePlanInput): NativePlan | null {
  const key = JSON.stringify(input);
  if (cache.has(key)) return cache.get(key)!;
  const plan = compilePlan(input);
  if (cache.size >= 16) cache.delete(cache.keys().next().value!);
  cache.set(key, plan);
  return plan;
}

interface Target {
  target: string;
  kind: typeof K_SOURCED | typeof K_STATIC;
  field: number;
  transform: number;
  staticJson: string;
}

function compilePlan(input: NativePlanInput): NativePlan | null {
  const { schema, columns, delimiter, quote, newline } = input;
  if ((input.emptyCells ?? "absent") !== "absent") return null;
  if (!singleByte(delimiter) || !singleByte(quote) || delimiter === quote) return null;
  if (newline !== "\n" && newline !== "\r\n") return null;
  if (columns.length === 0 || columns.length > MAX_FIELDS) return null;

  // The schema: an object of typed properties, nothing the C code does not check.
  if (!isObject(schema) || !Object.keys(schema).every((k) => ROOT_KEYS.has(k))) return null;
  if (schema.type !== undefined && schema.type !== "object") return null;
  const properties = schema.properties ?? {};
  if (!isObject(properties)) return null;
  const required = schema.required ?? [];
  if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) return null;
  const additional = schema.additionalProperties;
  if (additional !== undefined && typeof additional !== "boolean") return null;

  const names = Object.keys(properties);
  const list: readonly FieldMapping[] = input.fieldMappings.length > 0 ? input.fieldMappings : names.map((p) => ({ target: p, source: p }));
  const at = new Map<string, number>();
  columns.forEach((c, i) => at.set(c, i));
  const targets: Target[] = [];
  for (const m of list) {
    if (m.sources !== undefined || m.target === "__proto__" || INDEX_LIKE.test(m.target)) return null;
    if (targets.some((t) => t.target === m.target)) return null;
    const transform = m.transform === undefined ? 0 : TRANSFORMS[m.transform];
    if (transform === undefined) return null;
    if (m.source === undefined) {
      let v: unknown = m.value === "" ? undefined : m.value;
      if (v !== undefined && m.transform) {
        const r = TRANSFORM_FNS[m.transform](v);
        if (r === FAIL) return null;
        v = r === "" ? undefined : r;
      }
      targets.push({ target: m.target, kind: K_STATIC, field: -1, transform: 0, staticJson: v === undefined ? "" : JSON.stringify(v) });
      const prop = Object.hasOwn(properties, m.target) ? properties[m.target] : undefined;
      // Absent from every row while required or defaulted: every row would go to JavaScript.
      if (v === undefined ? required.includes(m.target) || (isObject(prop) && "default" in prop) : !staticFits(v, prop)) return null;
    } else {
      const field = at.get(m.source) ?? -1;
      const prop = Object.hasOwn(properties, m.target) ? properties[m.target] : undefined;
      if (field < 0 && (required.includes(m.target) || (isObject(prop) && "default" in prop))) return null;
      targets.push({ target: m.target, kind: K_SOURCED, field, transform, staticJson: "" });
    }
  }
  const isTarget = new Set(targets.map((t) => t.target));
  if (!required.every((r) => isTarget.has(r))) return null;
  if (additional === false && !targets.every((t) => Object.hasOwn(properties, t.target))) return null;
  // useDefaults fills a property no target writes into every row.
  for (const name of names) if (!isTarget.has(name) && isObject(properties[name]) && "default" in properties[name]) return null;

  const enc = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const put = (s: string): [number, number] => {
    const b = enc.encode(s);
    chunks.push(b);
    size += b.byteLength;
    return [size - b.byteLength, b.byteLength];
  };
  const enums: number[] = [];
  const enumPlace: number[] = [];
  const plan = new Int32Array(P_HEADER + targets.length * PT_SIZE);
  const nums = new Float64Array(targets.length * 4);
  let fixed = 2;
  plan[P_WIDTH] = columns.length;
  plan[P_DELIM] = delimiter.charCodeAt(0);
  plan[P_QUOTE] = quote.charCodeAt(0);
  plan[P_CRLF] = newline === "\r\n" ? 1 : 0;
  plan[P_TARGETS] = targets.length;
  for (let t = 0; t < targets.length; t++) {
    const tg = targets[t]!;
    const T = P_HEADER + t * PT_SIZE;
    const [keyOff, keyLen] = put(`${JSON.stringify(tg.target)}:`);
    const [staticOff, staticLen] = tg.staticJson ? put(tg.staticJson) : [0, 0];
    plan[T + T_KIND] = tg.kind;
    plan[T + T_FIELD] = tg.field;
    plan[T + T_TRANSFORM] = tg.transform;
    plan[T + T_KEY_OFF] = keyOff;
    plan[T + T_KEY_LEN] = keyLen;
    plan[T + T_STATIC_OFF] = staticOff;
    plan[T + T_STATIC_LEN] = staticLen;
    fixed += 1 + keyLen + Math.max(staticLen, 24);
    let flags = required.includes(tg.target) ? F_REQUIRED : 0;
    const prop = Object.hasOwn(properties, tg.target) ? properties[tg.target] : undefined;
    if (prop !== undefined && tg.kind === 0) {
      if (!isObject(prop) || !Object.keys(prop).every((k) => PROPERTY_KEYS.has(k))) return null;
      const type = prop.type === undefined ? 0 : TYPES[prop.type as string];
      if (type === undefined) return null;
      plan[T + T_TYPE] = type;
      // A value the transform makes that the type never takes (a number under `string`...): every row would go to JavaScript.
      const made = tg.transform === 4 || tg.transform === 5 ? "number" : tg.transform === 6 ? "boolean" : "string";
      if ((made === "number" && (type === 1 || type === 4)) || (made === "boolean" && type !== 0 && type !== 4)) return null;
      if ("default" in prop) flags |= F_DEFAULT;
      if (prop.minLength !== undefined) {
        if (!isCount(prop.minLength)) return null;
        flags |= F_MIN_LEN;
        plan[T + T_MIN_LEN] = Math.min(prop.minLength as number, 2 ** 31 - 1);
      }
      if (prop.maxLength !== undefined) {
        if (!isCount(prop.maxLength)) return null;
        flags |= F_MAX_LEN;
        plan[T + T_MAX_LEN] = Math.min(prop.maxLength as number, 2 ** 31 - 1);
      }
      const bounds: [string, number][] = [["minimum", F_MIN], ["maximum", F_MAX], ["exclusiveMinimum", F_EX_MIN], ["exclusiveMaximum", F_EX_MAX]];
      for (let b = 0; b < bounds.length; b++) {
        const [name, flag] = bounds[b]!;
        const v = prop[name];
        if (v === undefined) continue;
        if (typeof v !== "number" || !Number.isFinite(v)) return null;
        flags |= flag;
        nums[t * 4 + b] = v;
      }
      if (prop.format !== undefined) {
        if (prop.format !== "date") return null;
        flags |= F_FORMAT_DATE;
      }
      if (prop.enum !== undefined) {
        // The C code compares the text as read; a case change would have to be applied first.
        if (!Array.isArray(prop.enum) || prop.enum.length === 0 || !prop.enum.every((e) => typeof e === "string") || tg.transform === 2 || tg.transform === 3) return null;
        flags |= F_ENUM;
        enumPlace.push(T);
        plan[T + T_ENUM_COUNT] = prop.enum.length;
        const first = enums.length;
        for (const e of prop.enum as string[]) enums.push(...put(e));
        plan[T + T_ENUM_AT] = first;
      }
    }
    plan[T + T_FLAGS] = flags;
  }
  plan[P_FIXED] = fixed;
  // The enum table follows the targets; its entries' places are offsets into the whole plan.
  const whole = new Int32Array(plan.length + enums.length);
  whole.set(plan);
  whole.set(enums, plan.length);
  for (const T of enumPlace) whole[T + T_ENUM_AT] = whole[T + T_ENUM_AT]! + plan.length;
  const bytes = new Uint8Array(Math.max(1, size));
  let off = 0;
  for (const c of chunks) {
    bytes.set(c, off);
    off += c.byteLength;
  }
  return { plan: whole, bytes, nums };
}

/** A static value the C code may write as it is: its property (if any) has only a type it satisfies without coercion. */
function staticFits(v: unknown, prop: unknown): boolean {
  if (prop === undefined) return true;
  if (!isObject(prop)) return false;
  for (const k of Object.keys(prop)) if (k !== "type" && !ANNOTATIONS.has(k)) return false;
  switch (prop.type) {
    case undefined:
      return true;
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number" && Number.isFinite(v);
    case "integer":
      return Number.isInteger(v);
    case "boolean":
      return typeof v === "boolean";
    default:
      return false;
  }
}
