import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectError } from "./helpers/expect";
import { Harness, type Reply, type TestWorkspace } from "./helpers/harness";

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
let existing: { id: string; name: string };

const ROW = { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" } }, required: ["sku"] };


/** Everything the workspace's schema list shows, to prove a refused request changed nothing. */
async function snapshot(w: TestWorkspace = ws) {
  const res = await h.api(w, "GET", "/schemas?limit=100");
  expect(res.status).toBe(200);
  return res.body;
}

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
  const res = await h.api(ws, "POST", "/schemas", { name: "Orders", definition: ROW, description: "original" });
  expect(res.status).toBe(200);
  existing = res.body;
});

afterAll(async () => {
  await h.close();
});

describe("create is refused, and nothing is stored, when the definition", () => {
  const cases: [string, unknown, string | RegExp][] = [
    ["is an array", [], /^definition: must be a JSON Schema object/],
    ["is a string", "object", /^definition: must be a JSON Schema object/],
    ["is null", null, /^definition: must be a JSON Schema object/],
    ["is missing", undefined, /^definition: is required/],
    [
      "has a property whose type is not a JSON Schema type",
      { type: "object", properties: { x: { type: "strin" } } },
      /^definition\.properties\.x\.type: .*"string"/,
    ],
    ["has required that is not an array", { type: "object", properties: { a: {} }, required: "a" }, /^definition\.required: must be array/],
    [
      "uses draft-07 tuple items under draft 2020-12",
      { type: "object", properties: { pair: { type: "array", items: [{ type: "string" }] } } },
      /^definition\.properties\.pair\.items: /,
    ],
    ["has a type other than object", { type: "array", properties: {} }, /^definition\.type: must be 'object'/],
    ["has no type", { properties: { a: {} } }, /^definition\.type: must be 'object'/],
    ["has no properties", { type: "object" }, /^definition\.properties: is required/],
    ["has properties that are not an object", { type: "object", properties: [] }, /^definition\.properties/],
    [
      "requires a property it does not define",
      { type: "object", properties: { a: {} }, required: ["a", "b"] },
      "definition.required[1]: 'b' is not one of definition.properties",
    ],
    [
      "requires a name that only exists on Object.prototype",
      { type: "object", properties: { a: {} }, required: ["constructor"] },
      "definition.required[0]: 'constructor' is not one of definition.properties",
    ],
    [
      "names an unsupported meta-schema (draft-04)",
      { $schema: "http://json-schema.org/draft-04/schema#", type: "object", properties: {} },
      /^definition\.\$schema: unsupported meta-schema 'http:\/\/json-schema\.org\/draft-04\/schema#'/,
    ],
    [
      "names an unsupported meta-schema (2019-09)",
      { $schema: "https://json-schema.org/draft/2019-09/schema", type: "object", properties: {} },
      /^definition\.\$schema: unsupported meta-schema/,
    ],
    [
      "has a $ref that does not resolve",
      { type: "object", properties: { a: { $ref: "#/$defs/missing" } } },
      /^definition: .*#\/\$defs\/missing/,
    ],
    [
      "has a pattern that is not a regular expression",
      { type: "object", properties: { a: { type: "string", pattern: "(" } } },
      /^definition: .*regular expression/i,
    ],
    [
      "asserts a format the service does not know",
      { type: "object", properties: { mail: { type: "string", format: "emial" } } },
      /^definition\.properties\.mail\.format: unknown format 'emial'; known formats: .*email/,
    ],
  ];

  for (const [label, definition, message] of cases) {
    test(label, async () => {
      const before = await snapshot();
      const res = await h.api(ws, "POST", "/schemas", { name: `Bad: ${label}`, definition });
      expectError(res, 400, "invalid_input", message);
      expect(await snapshot()).toEqual(before);
    });
  }

  test("has a draft-07 definition that is invalid under draft-07 (message names where)", async () => {
    const res = await h.api(ws, "POST", "/schemas", {
      name: "Bad draft 07",
      definition: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { n: { minimum: "zero" } } },
    });
    expectError(res, 400, "invalid_input", /^definition\.properties\.n\.minimum: /);
  });

  test("refers by $id to another workspace's schema (it must not resolve)", async () => {
    const shared = { $id: "https://schemas.example.com/address", type: "object", properties: { city: { type: "string" } } };
    const theirs = await h.api(other, "POST", "/schemas", { name: "Address", definition: shared });
    expect(theirs.status).toBe(200);
    const res = await h.api(ws, "POST", "/schemas", {
      name: "Borrowing",
      definition: { type: "object", properties: { home: { $ref: "https://schemas.example.com/address" } } },
    });
    expectError(res, 400, "invalid_input", /^definition: .*schemas\.example\.com\/address/);
  });
});

describe("other refused creates", () => {
  test("a duplicate name is a 409, also after trimming, and the original is untouched", async () => {
    const before = await snapshot();
    const dup = await h.api(ws, "POST", "/schemas", { name: "Orders", definition: { type: "object", properties: {} } });
    expectError(dup, 409, "conflict", "name: a schema named 'Orders' already exists");
    const padded = await h.api(ws, "POST", "/schemas", { name: "  Orders ", definition: ROW });
    expectError(padded, 409, "conflict");
    const cased = await h.api(ws, "POST", "/schemas", { name: "ORDERS", definition: ROW });
    expectError(cased, 409, "conflict", "name: a schema named 'ORDERS' already exists");
    expect(await snapshot()).toEqual(before);
  });

  test("a misspelt member is a 400 naming it, so a description is not silently lost", async () => {
    const before = await snapshot();
    const res = await h.api(ws, "POST", "/schemas", { name: "Typo", definition: ROW, descripton: "rows" });
    expectError(res, 400, "invalid_input", "descripton: unknown member (check its spelling)");
    expect(await snapshot()).toEqual(before);
  });

  test("the same name in another workspace is not a conflict", async () => {
    const res = await h.api(other, "POST", "/schemas", { name: "Orders", definition: ROW });
    expect(res.status).toBe(200);
  });

  test("a missing, empty or over-long name, or a description that is too long, is a 400 naming the field", async () => {
    const before = await snapshot();
    expectError(await h.api(ws, "POST", "/schemas", { definition: ROW }), 400, "invalid_input", /^name: is required/);
    expectError(await h.api(ws, "POST", "/schemas", { name: "   ", definition: ROW }), 400, "invalid_input", /^name: must not be empty/);
    expectError(await h.api(ws, "POST", "/schemas", { name: "x".repeat(201), definition: ROW }), 400, "invalid_input", /^name: /);
    expectError(
      await h.api(ws, "POST", "/schemas", { name: "Long description", definition: ROW, description: "d".repeat(2001) }),
      400,
      "invalid_input",
      /^description: /,
    );
    expectError(await h.api(ws, "POST", "/schemas", { name: 42, definition: ROW }), 400, "invalid_input", /^name: /);
    expect(await snapshot()).toEqual(before);
  });

  test("a body that is not JSON is a 400", async () => {
    const res = await h.request("POST", "/schemas", {
      key: ws.apiKey,
      version: "2026-05-25",
      rawBody: '{"name": "Broken",',
      headers: { "content-type": "application/json" },
    });
    expectError(res, 400, "invalid_input");
  });
});

describe("refused updates change nothing", () => {
  test("an invalid definition on PATCH is a 400 and the stored definition stays", async () => {
    const bad = [
      { type: "object", properties: { x: { type: "strin" } } },
      { type: "string", properties: {} },
      { type: "object", properties: { a: {} }, required: ["nope"] },
      { $schema: "http://json-schema.org/draft-04/schema#", type: "object", properties: {} },
      { type: "object", properties: { a: { $ref: "#/definitions/gone" } } },
    ];
    for (const definition of bad) {
      const res = await h.api(ws, "PATCH", `/schemas/${existing.id}`, { definition, name: "Should not apply" });
      expectError(res, 400, "invalid_input", /^definition/);
    }
    const got = await h.api(ws, "GET", `/schemas/${existing.id}`);
    expect(got.body).toEqual(existing);
  });

  test("renaming onto another schema's name is a 409 and neither schema changes", async () => {
    const second = await h.api(ws, "POST", "/schemas", { name: "Invoices", definition: ROW });
    expect(second.status).toBe(200);
    const before = await snapshot();
    const res = await h.api(ws, "PATCH", `/schemas/${second.body.id}`, { name: "Orders", description: "changed?" });
    expectError(res, 409, "conflict", "name: a schema named 'Orders' already exists");
    expect(await snapshot()).toEqual(before);
    const got = await h.api(ws, "GET", `/schemas/${second.body.id}`);
    expect(got.body.name).toBe("Invoices");
    expect("description" in got.body).toBe(false);
  });

  test("an empty name or a non-object definition on PATCH is a 400", async () => {
    expectError(await h.api(ws, "PATCH", `/schemas/${existing.id}`, { name: "" }), 400, "invalid_input", /^name: /);
    expectError(await h.api(ws, "PATCH", `/schemas/${existing.id}`, { definition: [] }), 400, "invalid_input", /^definition: /);
    const got = await h.api(ws, "GET", `/schemas/${existing.id}`);
    expect(got.body).toEqual(existing);
  });
});

describe("delete", () => {
  test("deleting a schema a pipeline uses is a 409 naming the pipeline, and the schema stays", async () => {
    const schema = await h.api(ws, "POST", "/schemas", { name: "In use", definition: ROW });
    const conn = await h.api(ws, "POST", "/connections", { name: "Feed", type: "SFTP", useHostedSFTP: true });
    expect(conn.status).toBe(200);
    const pipe = await h.api(ws, "POST", "/pipelines", { name: "Nightly import", clientId: conn.body.id, schemaId: schema.body.id });
    expect(pipe.status).toBe(200);

    const res = await h.api(ws, "DELETE", `/schemas/${schema.body.id}`);
    expectError(res, 409, "conflict", /'Nightly import'/);
    const got = await h.api(ws, "GET", `/schemas/${schema.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(schema.body);
  });
});

describe("unknown ids", () => {
  test("GET, PATCH and DELETE of an unknown id are 404", async () => {
    expectError(await h.api(ws, "GET", "/schemas/sch_doesnotexist"), 404, "not_found", "schema 'sch_doesnotexist' not found");
    expectError(await h.api(ws, "PATCH", "/schemas/sch_doesnotexist", { name: "x" }), 404, "not_found");
    expectError(await h.api(ws, "DELETE", "/schemas/sch_doesnotexist"), 404, "not_found");
  });

  test("another workspace's schema is a 404 on every route and is not changed", async () => {
    const before = await h.api(ws, "GET", `/schemas/${existing.id}`);
    expectError(await h.api(other, "GET", `/schemas/${existing.id}`), 404, "not_found");
    expectError(await h.api(other, "PATCH", `/schemas/${existing.id}`, { name: "Hijacked" }), 404, "not_found");
    expectError(await h.api(other, "DELETE", `/schemas/${existing.id}`), 404, "not_found");
    const after = await h.api(ws, "GET", `/schemas/${existing.id}`);
    expect(after.body).toEqual(before.body);
  });
});

describe("list query", () => {
  test("out-of-range page and limit are 400s naming the parameter", async () => {
    expectError(await h.api(ws, "GET", "/schemas?limit=0"), 400, "invalid_input", /^limit: /);
    expectError(await h.api(ws, "GET", "/schemas?limit=101"), 400, "invalid_input", /^limit: must be at most 100/);
    expectError(await h.api(ws, "GET", "/schemas?page=0"), 400, "invalid_input", /^page: /);
    expectError(await h.api(ws, "GET", "/schemas?page=two"), 400, "invalid_input", /^page: /);
  });
});
