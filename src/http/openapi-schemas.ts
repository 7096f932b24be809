import { isDeepStrictEqual } from "node:util";
import { z } from "zod";

/**
 * The named zod shapes as OpenAPI schemas, in the two forms zod gives:
 * "output" (what the service answers: a member with a default is always
 * there) and "input" (what a client sends: such a member is optional).
 * Most shapes read the same both ways; those that do not are written out in
 * their input form wherever a request uses them, never as a shared
 * component, since a tool reading a component cannot tell which side it is
 * on (openapi-typescript, by default, makes every member with a `default`
 * required in components/schemas). docs/decisions/openapi.md.
 */
type Json = Record<string, unknown>;
const SCHEMAS = "#/components/schemas/";

export const override = (ctx: { zodSchema: z.core.$ZodType; jsonSchema: Json }) => {
  if (ctx.zodSchema._zod.def.type === "date") {
    ctx.jsonSchema.type = "string";
    ctx.jsonSchema.format = "date-time";
  }
};

function convert(io: "input" | "output"): Record<string, Json> {
  const opts = { uri: (id: string) => `${SCHEMAS}${id}`, unrepresentable: "any", override, io } as const;
  const { schemas } = z.toJSONSchema(z.globalRegistry, opts) as { schemas: Record<string, Json> };
  const out: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $schema, $id, ...rest } = schema;
    out[id] = rest;
  }
  return out;
}

/** `#/components/schemas/X` references anywhere in `value`. */
export function schemaRefs(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) schemaRefs(v, into);
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith(SCHEMAS)) into.add(v.slice(SCHEMAS.length));
      else schemaRefs(v, into);
    }
  }
  return into;
}

export class NamedSchemas {
  readonly outputs = convert("output");
  private readonly inputs = convert("input");
  private readonly invariant = new Map<string, boolean>();

  /** Whether the shape and every shape it names read the same as input and as output. */
  private sameBothWays(id: string): boolean {
    const known = this.invariant.get(id);
    if (known !== undefined) return known;
    this.invariant.set(id, true); // a shape that names itself is judged by the rest
    const same =
      isDeepStrictEqual(this.inputs[id], this.outputs[id]) && [...schemaRefs(this.inputs[id])].every((r) => this.sameBothWays(r));
    this.invariant.set(id, same);
    return same;
  }

  /** The named shape's input form with every shape it names that differs as input written out in place. */
  request(id: string): Json {
    const schema = this.inputs[id];
    if (!schema) throw new Error(`openapi: no named shape '${id}'`);
    return this.forRequest(schema, [id]) as Json;
  }

  /** A request-side schema (query parameters, bodies) with its references resolved the same way. */
  forRequest(value: unknown, within: string[] = []): unknown {
    if (Array.isArray(value)) return value.map((v) => this.forRequest(v, within));
    if (!value || typeof value !== "object") return value;
    const { $ref, ...rest } = value as Json;
    if (typeof $ref === "string" && $ref.startsWith(SCHEMAS)) {
      const id = $ref.slice(SCHEMAS.length);
      if (this.sameBothWays(id)) return value;
      if (within.includes(id)) throw new Error(`openapi: '${id}' names itself and differs as input; it cannot be written out`);
      return { ...(this.forRequest(this.inputs[id], [...within, id]) as Json), ...(this.forRequest(rest, within) as Json) };
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.forRequest(v, within)]));
  }
}
