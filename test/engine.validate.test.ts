import { describe, expect, test } from "bun:test";
import type { RowError } from "../src/domain/runs";
import { cachedValidators, SchemaCompileError, validatorFor } from "../src/engine/validate";

const schema = {
  type: "object",
  properties: {
    id: { type: "integer" },
    email: { type: "string", format: "email" },
    amount: { type: "number", minimum: 0 },
    active: { type: "boolean" },
    status: { enum: ["new", "done"] },
    country: { type: "string", default: "DE" },
    address: { type: "object", properties: { zip: { type: "string", pattern: "^[0-9]{5}$" } } },
  },
  required: ["id", "email"],
  additionalProperties: false,
};

function check(row: Record<string, unknown>, skip?: Set<string>) {
  const errors: RowError[] = [];
  const ok = validatorFor({ id: "sch_v", version: "1", definition: schema }).check(row, 3, errors, skip);
  return { ok, errors, row };
}

describe("row validation", () => {
  test("text from CSV is coerced to the schema's types, and defaults fill missing properties", () => {
    const { ok, row } = check({ id: "12", email: "a@b.co", amount: "3.5", active: "true" });
    expect(ok).toBe(true);
    expect(row).toEqual({ id: 12, email: "a@b.co", amount: 3.5, active: true, country: "DE" });
  });

  test("every bad field is reported with its path, the rule and the value", () => {
    const { ok, errors } = check({ email: "not-mail", amount: "-1", active: "perhaps", status: "open", address: { zip: "12" }, extra: 1 });
    expect(ok).toBe(false);
    const byField = Object.fromEntries(errors.map((e) => [e.field, e.message]));
    expect(errors.every((e) => e.inputRow === 4)).toBe(true);
    expect(byField).toEqual({
      id: "is required",
      extra: "is not a property of the schema",
      email: 'must match format "email", got "not-mail"',
      amount: "must be >= 0, got -1",
      active: 'must be boolean, got "perhaps"',
      status: 'must be equal to one of the allowed values ("new", "done"), got "open"',
      "address.zip": 'must match pattern "^[0-9]{5}$", got "12"',
    });
  });

  test("fields whose transform failed are not reported twice", () => {
    const { ok, errors } = check({ email: "a@b.co" }, new Set(["id"]));
    expect(ok).toBe(false);
    expect(errors).toEqual([]);
  });

  test("validators are compiled once per schema version and kept in a bounded cache", () => {
    const ref = { id: "sch_cache", version: "a", definition: { type: "object", properties: { n: { type: "integer" } } } };
    const first = validatorFor(ref);
    expect(validatorFor({ ...ref })).toBe(first);
    const changed = validatorFor({ ...ref, version: "b", definition: { type: "object", properties: { n: { type: "string" } } } });
    expect(changed).not.toBe(first);
    expect(changed.check({ n: "x" }, 0, [])).toBe(true);
    for (let i = 0; i < 40; i++) validatorFor({ id: `sch_many_${i}`, version: "1", definition: { type: "object", properties: {} } });
    expect(cachedValidators()).toBeLessThanOrEqual(32);
  });

  test("two schemas with the same $id do not clash; draft-07 is honoured", () => {
    const a = validatorFor({ id: "sch_a", version: "1", definition: { $id: "https://x/row", type: "object", properties: { n: { type: "integer" } } } });
    const b = validatorFor({
      id: "sch_b",
      version: "1",
      definition: { $schema: "http://json-schema.org/draft-07/schema#", $id: "https://x/row", type: "object", properties: { n: { type: "boolean" } } },
    });
    expect(a.check({ n: "5" }, 0, [])).toBe(true);
    expect(b.check({ n: "5" }, 0, [])).toBe(false);
  });

  test("a schema that cannot compile is a clear error", () => {
    expect(() => validatorFor({ id: "sch_bad", version: "1", definition: { type: "object", properties: { a: { $ref: "#/nowhere" } } } })).toThrow(SchemaCompileError);
  });
});
