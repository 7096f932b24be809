import { z } from "zod";
import { builder } from "./builder";

/**
 * GraphQL object and input types generated from the named zod shapes that
 * the services and the REST description already use, so the three surfaces
 * cannot drift apart. Rules:
 * - a named shape (`.meta({ id })`) becomes a type of that name; as an input,
 *   a shape whose id does not end in `Input` is named `<id>Input`;
 * - strings, numbers, integers and booleans map to their scalars, date-times
 *   to DateTime; a named enum (`.meta({ id })`) whose values are valid
 *   GraphQL names becomes a GraphQL enum, other enums are String (the
 *   services check the values and name the allowed ones in their errors);
 * - open objects (records, objects that keep unknown members) map to JSON;
 * - members marked deprecated (legacy, version-2024-09-01-only) are left out.
 */
type Json = Record<string, unknown>;

const override = (ctx: { zodSchema: z.core.$ZodType; jsonSchema: Json }) => {
  if (ctx.zodSchema._zod.def.type === "date") {
    ctx.jsonSchema.type = "string";
    ctx.jsonSchema.format = "date-time";
  }
};
let cache: { output: Record<string, Json>; input: Record<string, Json> } | null = null;
function defs() {
  if (!cache) {
    const opts = { uri: (id: string) => id, unrepresentable: "any", override } as const;
    cache = {
      output: (z.toJSONSchema(z.globalRegistry, { ...opts, io: "output" }) as { schemas: Record<string, Json> }).schemas,
      input: (z.toJSONSchema(z.globalRegistry, { ...opts, io: "input" }) as { schemas: Record<string, Json> }).schemas,
    };
  }
  return cache;
}

type Mode = "output" | "input";
type Row = Record<string, unknown>;
const outRef = () => builder.objectRef<Row>("");
const inRef = () => builder.inputRef<Row>("");
export type OutputRef = ReturnType<typeof outRef>;
export type InputRef = ReturnType<typeof inRef>;
// biome-ignore lint/suspicious/noExplicitAny: field types are chosen at run time from the shapes
type AnyRef = any;
const refs = { output: new Map<string, OutputRef>(), input: new Map<string, InputRef>() };

function isOpenObject(s: Json): boolean {
  if (s.type !== "object") return false;
  const extra = s.additionalProperties;
  return !s.properties || (extra !== undefined && extra !== false);
}

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
function isEnum(s: Json): s is Json & { enum: string[] } {
  return s.type === "string" && Array.isArray(s.enum) && s.enum.every((v) => typeof v === "string" && GRAPHQL_NAME.test(v));
}

const enums = new Map<string, AnyRef>();
/** A named string enum whose values are valid GraphQL names becomes a GraphQL enum, shared by inputs and outputs. */
function enumRef(id: string, s: Json & { enum: string[] }): AnyRef {
  let ref = enums.get(id);
  if (!ref) {
    ref = builder.enumType(id, { description: s.description as string | undefined, values: s.enum });
    enums.set(id, ref);
  }
  return ref;
}

/** GraphQL type for a JSON Schema member, and whether it admits null. */
function typeOf(s: Json, mode: Mode): { type: AnyRef; nullable: boolean } {
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (union) {
    const nonNull = union.filter((u) => u.type !== "null");
    const nullable = nonNull.length < union.length;
    if (nonNull.length === 1) return { type: typeOf(nonNull[0]!, mode).type, nullable };
    return { type: "JSON", nullable };
  }
  // zod writes a nullable primitive as `type: ["string", "null"]`.
  if (Array.isArray(s.type)) {
    const types = (s.type as string[]).filter((t) => t !== "null");
    const nullable = types.length < s.type.length;
    if (types.length === 1) return { type: typeOf({ ...s, type: types[0] }, mode).type, nullable };
    return { type: "JSON", nullable };
  }
  if (typeof s.$ref === "string") {
    const id = s.$ref;
    const target = defs()[mode][id];
    if (target && isEnum(target)) return { type: enumRef(id, target), nullable: false };
    return { type: target && !isOpenObject(target) && target.type === "object" ? typeRef(id, mode) : "JSON", nullable: false };
  }
  switch (s.type) {
    case "string":
      return { type: s.format === "date-time" ? "DateTime" : "String", nullable: false };
    case "integer":
      return { type: "Int", nullable: false };
    case "number":
      return { type: "Float", nullable: false };
    case "boolean":
      return { type: "Boolean", nullable: false };
    case "array": {
      const items = typeOf((s.items ?? {}) as Json, mode);
      return { type: items.type === "JSON" ? "JSON" : [items.type], nullable: false };
    }
    case "object":
      return { type: "JSON", nullable: false };
    default:
      // No type at all (unknown/any): null is one of its values.
      return { type: "JSON", nullable: true };
  }
}

function properties(id: string, mode: Mode): [string, Json, boolean][] {
  const s = defs()[mode][id];
  if (!s) throw new Error(`no shape named '${id}'`);
  const required = new Set((s.required ?? []) as string[]);
  return Object.entries((s.properties ?? {}) as Record<string, Json>)
    .filter(([, p]) => p.deprecated !== true)
    .map(([name, p]) => [name, p, required.has(name)]);
}

/** The GraphQL type generated for a named zod shape. */
export function typeRef(id: string, mode: "output"): OutputRef;
export function typeRef(id: string, mode: "input"): InputRef;
export function typeRef(id: string, mode: Mode): OutputRef | InputRef;
export function typeRef(id: string, mode: Mode): OutputRef | InputRef {
  const existing = refs[mode].get(id);
  if (existing) return existing;
  const description = defs()[mode][id]?.description as string | undefined;
  if (mode === "output") {
    const ref = builder.objectRef<Row>(id);
    refs.output.set(id, ref);
    ref.implement({
      description,
      fields: (t) =>
        Object.fromEntries(
          properties(id, "output").map(([name, p, required]) => {
            const { type, nullable } = typeOf(p, "output");
            return [
              name,
              t.field({
                type,
                nullable: Array.isArray(type) ? { list: nullable || !required, items: false } : nullable || !required,
                description: p.description as string | undefined,
                // The member's type is chosen at run time from the shape: no static type fits Pothos's resolver or field options.
                resolve: (parent: Record<string, unknown>) => parent[name] as never,
              } as never),
            ];
          }),
        ),
    });
    return ref;
  }
  const name = id.endsWith("Input") ? id : `${id}Input`;
  const ref = builder.inputRef<Row>(name);
  refs.input.set(id, ref);
  ref.implement({
    description,
    fields: (t) =>
      // biome-ignore lint/suspicious/noExplicitAny: generated fields
      Object.fromEntries<any>(
        properties(id, "input").map(([field, p, required]) => {
          const { type } = typeOf(p, "input");
          return [
            field,
            t.field({
              type,
              required: Array.isArray(type) ? { list: required, items: true } : required,
              description: p.description as string | undefined,
              // The member's type is chosen at run time from the shape: no static type fits Pothos's field options.
            } as never),
          ];
        }),
      ),
  });
  return ref;
}

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;
/** A GraphQL object type whose resolvers return `O`. */
export type ObjectRefOf<O> = PothosSchemaTypes.ObjectRef<Types, O>;

/**
 * The GraphQL types of a named shape, declared with the shape's own types:
 * a resolver returns what the shape describes (`z.output`), and an argument
 * of an input type is what the use case parses with that shape (`z.input`;
 * GraphQL may send null for an absent member, which the use case refuses
 * as on every surface). The fields are made at run time from the shape's
 * JSON Schema, so no static type links them to it: this is the one place
 * that says which type they carry.
 */
export const outputType = <S extends z.ZodType>(shape: S) =>
  typeRef(idOf(shape), "output") as unknown as ObjectRefOf<z.output<S>>;
export const inputType = <S extends z.ZodType>(shape: S) =>
  typeRef(idOf(shape), "input") as unknown as PothosSchemaTypes.InputObjectRef<Types, z.input<S>>;

function idOf(shape: z.ZodType): string {
  const id = z.globalRegistry.get(shape)?.id;
  if (!id) throw new Error("GraphQL types are generated from named shapes: add .meta({ id })");
  return id;
}

/** The GraphQL enum generated for a named zod enum, for arguments. */
export function enumNamed(id: string): AnyRef {
  const s = defs().output[id];
  if (!s || !isEnum(s)) throw new Error(`no enum shape named '${id}'`);
  return enumRef(id, s);
}
