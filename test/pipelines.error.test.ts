import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setFeature } from "../src/services/workspaces/update-workspace";
import { expectError } from "./helpers/expect";
import { Harness, type Reply, type TestWorkspace } from "./helpers/harness";

let h: Harness;
let ws: TestWorkspace;
let gated: TestWorkspace;
let other: TestWorkspace;
let sftp: { id: string };
let email: { id: string };
let schema: { id: string };
let existing: { id: string; name: string };
let theirs: { conn: { id: string }; schema: { id: string }; webhook: { id: string }; pipeline: { id: string } };

const ROW = { type: "object", properties: { sku: { type: "string" } } };
const TRANSFORMS = ["trim", "uppercase", "lowercase", "number", "integer", "boolean", "date", "datetime"];



/** The workspace's pipelines as listed, to prove a refused request changed nothing. */
async function snapshot(w: TestWorkspace = ws) {
  const res = await h.api(w, "GET", "/pipelines?limit=100");
  expect(res.status).toBe(200);
  return { total: res.headers.get("x-total-count"), body: res.body };
}

const create = (body: Record<string, unknown>, w: TestWorkspace = ws) =>
  h.api(w, "POST", "/pipelines", { name: "Candidate", clientId: sftp.id, schemaId: schema.id, ...body });

const withMappings = (...fieldMappings: unknown[]) => ({ mappings: { fieldMappings } });

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  gated = await h.workspace({ name: "Gated", features: ["aggregated-mappings"] });
  other = await h.workspace({ name: "Other" });
  sftp = await h.ok(ws, "POST", "/connections", { name: "Warehouse", type: "SFTP", useHostedSFTP: true });
  email = await h.ok(ws, "POST", "/connections", { name: "Mailroom", type: "EMAIL", emailAllowedFormats: ["csv"] });
  schema = await h.ok(ws, "POST", "/schemas", { name: "Rows", definition: ROW });
  existing = await h.ok(ws, "POST", "/pipelines", {
    name: "Existing",
    clientId: sftp.id,
    schemaId: schema.id,
    mappings: { fieldMappings: [{ source: "A", target: "a" }], options: { delimiter: ";" }, validations: {} },
  });
  const conn = await h.ok(other, "POST", "/connections", { name: "Theirs", type: "SFTP", useHostedSFTP: true });
  const sch = await h.ok(other, "POST", "/schemas", { name: "Theirs", definition: ROW });
  theirs = {
    conn,
    schema: sch,
    webhook: await h.ok(other, "POST", "/webhooks", { name: "Theirs", url: "https://hooks.example.com/theirs" }),
    pipeline: await h.ok(other, "POST", "/pipelines", { name: "Theirs", clientId: conn.id, schemaId: sch.id }),
  };
});

afterAll(async () => {
  await h.close();
});

describe("mappings that are refused on create, storing nothing", () => {
  const cases: [string, unknown, string | RegExp][] = [
    [
      "mappings as a bare array",
      { mappings: [{ source: "A", target: "a" }] },
      /^mappings: .*mappings\.fieldMappings.*not as a bare array/,
    ],
    ["mappings as a string", { mappings: "A->a" }, /^mappings: must be an object/],
    ["mappings null", { mappings: null }, /^mappings: must be an object/],
    ["fieldMappings not an array", { mappings: { fieldMappings: { source: "A", target: "a" } } }, /^mappings\.fieldMappings: /],
    ["a mapping with none of source, value or sources", withMappings({ target: "a" }), /^mappings\.fieldMappings\[0\]\.source: one of source, value or sources is required/],
    ["a mapping with both source and value", withMappings({ source: "A", target: "a", value: "x" }), /^mappings\.fieldMappings\[0\]\.value: cannot be combined with source/],
    ["a delimiter without sources", withMappings({ source: "A", target: "a", delimiter: "," }), /^mappings\.fieldMappings\[0\]\.delimiter: only applies to a mapping with sources/],
    ["a mapping without target", withMappings({ source: "A" }), /^mappings\.fieldMappings\[0\]\.target: is required/],
    ["an empty target", withMappings({ source: "A", target: "" }), /^mappings\.fieldMappings\[0\]\.target: must not be empty/],
    [
      "two mappings with the same target",
      withMappings({ source: "A", target: "a" }, { source: "B", target: "b" }, { value: "x", target: "a" }),
      "mappings.fieldMappings[2].target: 'a' is already the target of fieldMappings[0]",
    ],
    ["an unknown option value", { mappings: { fieldMappings: [], options: { encoding: "ebcdic" } } }, /^mappings\.options\.encoding: /],
    ["an unknown headerMatch", { mappings: { fieldMappings: [], options: { headerMatch: "fuzzy" } } }, "mappings.options.headerMatch: must be one of exact, case-insensitive, normalized"],
    ["an unknown missingColumns", { mappings: { fieldMappings: [], options: { missingColumns: "ignore" } } }, "mappings.options.missingColumns: must be one of fail, proceed"],
    ["an emptyCells that is not a rule", { mappings: { fieldMappings: [], options: { emptyCells: "" } } }, "mappings.options.emptyCells: must be one of absent, empty-string, null"],
    ["an unknown onInvalidRow", { mappings: { fieldMappings: [], validations: { onInvalidRow: "explode" } } }, /^mappings\.validations\.onInvalidRow: /],
    ["a ratio above 1", { mappings: { fieldMappings: [], validations: { maxInvalidRatio: 2 } } }, /^mappings\.validations\.maxInvalidRatio: /],
    ["a misspelt member of a field mapping", withMappings({ source: "A", target: "a", tranform: "trim" }), "mappings.fieldMappings[0].tranform: unknown member (check its spelling)"],
    ["a misspelt member of mappings", { mappings: { fieldMapings: [] } }, "mappings.fieldMapings: unknown member (check its spelling)"],
    ["a misspelt pipeline member", { isActiv: false }, "isActiv: unknown member (check its spelling)"],
  ];
  for (const [label, body, message] of cases) {
    test(label, async () => {
      const before = await snapshot();
      expectError(await create(body as Record<string, unknown>), 400, "invalid_input", message);
      expect(await snapshot()).toEqual(before);
    });
  }

  test("an unknown transform is a 400 that lists every allowed transform", async () => {
    const before = await snapshot();
    const res = await create(withMappings({ source: "A", target: "a" }, { source: "B", target: "b", transform: "reverse" }));
    expectError(res, 400, "invalid_input", /^mappings\.fieldMappings\[1\]\.transform: unknown transform 'reverse'; allowed: /);
    for (const t of TRANSFORMS) expect(res.body.message).toContain(t);
    expect(await snapshot()).toEqual(before);
  });

  test("sources combined with source or value is a 400 even where aggregated mappings are enabled", async () => {
    const conn = await h.ok(gated, "POST", "/connections", { name: "Gated feed", type: "SFTP", useHostedSFTP: true });
    const sch = await h.ok(gated, "POST", "/schemas", { name: "Rows", definition: ROW });
    const base = { name: "Mixed", clientId: conn.id, schemaId: sch.id };
    const before = await snapshot(gated);
    expectError(
      await h.api(gated, "POST", "/pipelines", { ...base, ...withMappings({ sources: ["A", "B"], source: "A", target: "ab" }) }),
      400,
      "invalid_input",
      /^mappings\.fieldMappings\[0\]\.source: cannot be combined with sources/,
    );
    expectError(
      await h.api(gated, "POST", "/pipelines", { ...base, ...withMappings({ sources: ["A"], value: "x", target: "ab" }) }),
      400,
      "invalid_input",
      /^mappings\.fieldMappings\[0\]\.value: cannot be combined with sources/,
    );
    expectError(
      await h.api(gated, "POST", "/pipelines", { ...base, ...withMappings({ sources: [], target: "ab" }) }),
      400,
      "invalid_input",
      /^mappings\.fieldMappings\[0\]\.sources: /,
    );
    expect(await snapshot(gated)).toEqual(before);
  });
});

describe("the aggregated-mappings gate", () => {
  test("sources is refused with feature_not_enabled while off, allowed once on, refused again once off", async () => {
    const aggregated = withMappings({ source: "Id", target: "id" }, { sources: ["First", "Last"], target: "name" });
    const before = await snapshot();
    expectError(
      await create({ name: "Gate test", ...aggregated }),
      400,
      "feature_not_enabled",
      "mappings.fieldMappings[1].sources: aggregated mappings are not enabled for this workspace",
    );
    expect(await snapshot()).toEqual(before);

    await setFeature(h.svc, { workspaceId: ws.workspaceId, feature: "aggregated-mappings", enabled: true });
    const allowed = await create({ name: "Gate test", ...aggregated });
    expect(allowed.status).toBe(200);
    expect(allowed.body.mappings.fieldMappings[1]).toEqual({ sources: ["First", "Last"], target: "name" });

    await setFeature(h.svc, { workspaceId: ws.workspaceId, feature: "aggregated-mappings", enabled: false });
    const mid = await snapshot();
    expectError(await create({ name: "Gate test 2", ...aggregated }), 400, "feature_not_enabled");
    expectError(
      await h.api(ws, "PATCH", `/pipelines/${existing.id}`, { name: "Renamed by refused patch", ...aggregated }),
      400,
      "feature_not_enabled",
    );
    expect(await snapshot()).toEqual(mid);

    // The pipeline saved while the gate was on still reads, and edits that leave mappings alone still work.
    const renamed = await h.api(ws, "PATCH", `/pipelines/${allowed.body.id}`, { name: "Gate test (renamed)" });
    expect(renamed.status).toBe(200);
    expect(renamed.body.mappings).toEqual(allowed.body.mappings);
    await h.ok(ws, "DELETE", `/pipelines/${allowed.body.id}`);
  });
});

describe("references", () => {
  test("an unknown or another workspace's clientId is a 404 naming clientId", async () => {
    const before = await snapshot();
    expectError(await create({ clientId: "conn_nope" }), 404, "not_found", "clientId: connection 'conn_nope' not found");
    expectError(await create({ clientId: theirs.conn.id }), 404, "not_found", /^clientId: /);
    expect(await snapshot()).toEqual(before);
  });

  test("an unknown or another workspace's schemaId is a 404 naming schemaId", async () => {
    const before = await snapshot();
    expectError(await create({ schemaId: "sch_nope" }), 404, "not_found", "schemaId: schema 'sch_nope' not found");
    expectError(await create({ schemaId: theirs.schema.id }), 404, "not_found", /^schemaId: /);
    expect(await snapshot()).toEqual(before);
  });

  test("an unknown or another workspace's webhook id is a 404 naming its place in webhookIds", async () => {
    const mine = await h.ok(ws, "POST", "/webhooks", { name: "Mine", url: "https://hooks.example.com/mine" });
    const before = await snapshot();
    expectError(await create({ webhookIds: [mine.id, "wh_nope"] }), 404, "not_found", "webhookIds[1]: webhook 'wh_nope' not found");
    expectError(await create({ webhookIds: [theirs.webhook.id] }), 404, "not_found", /^webhookIds\[0\]: /);
    expect(await snapshot()).toEqual(before);
  });

  test("PATCH with a bad reference is a 404 and leaves the pipeline as it was", async () => {
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Linked", url: "https://hooks.example.com/linked" });
    const p = await h.ok(ws, "POST", "/pipelines", { name: "Refs kept", clientId: sftp.id, schemaId: schema.id, webhookIds: [hook.id] });
    expectError(await h.api(ws, "PATCH", `/pipelines/${p.id}`, { name: "x", clientId: theirs.conn.id }), 404, "not_found", /^clientId: /);
    expectError(await h.api(ws, "PATCH", `/pipelines/${p.id}`, { name: "x", schemaId: theirs.schema.id }), 404, "not_found", /^schemaId: /);
    expectError(
      await h.api(ws, "PATCH", `/pipelines/${p.id}`, { name: "x", webhookIds: [theirs.webhook.id] }),
      404,
      "not_found",
      /^webhookIds\[0\]: /,
    );
    expect(await h.ok(ws, "GET", `/pipelines/${p.id}`)).toEqual(p);
  });

  test("an outbound pipeline on an EMAIL connection is a 400, on create and on PATCH", async () => {
    const before = await snapshot();
    expectError(await create({ clientId: email.id, direction: "outbound" }), 400, "invalid_input", /^direction: outbound pipelines deliver over SFTP/);
    expect(await snapshot()).toEqual(before);

    const inbound = await h.ok(ws, "POST", "/pipelines", { name: "Mail inbound", clientId: email.id, schemaId: schema.id });
    expectError(await h.api(ws, "PATCH", `/pipelines/${inbound.id}`, { direction: "outbound" }), 400, "invalid_input", /^direction: /);
    expect(await h.ok(ws, "GET", `/pipelines/${inbound.id}`)).toEqual(inbound);

    const outbound = await h.ok(ws, "POST", "/pipelines", { name: "Sftp outbound", clientId: sftp.id, schemaId: schema.id, direction: "outbound" });
    expectError(await h.api(ws, "PATCH", `/pipelines/${outbound.id}`, { clientId: email.id }), 400, "invalid_input", /^direction: /);
    expect(await h.ok(ws, "GET", `/pipelines/${outbound.id}`)).toEqual(outbound);
  });
});

describe("other refused input", () => {
  test("a direction outside the enum is a 400 naming direction", async () => {
    const before = await snapshot();
    expectError(await create({ direction: "sideways" }), 400, "invalid_input", "direction: must be one of inbound, outbound");
    expectError(await h.api(ws, "PATCH", `/pipelines/${existing.id}`, { direction: "both" }), 400, "invalid_input", /^direction: /);
    expect(await snapshot()).toEqual(before);
  });

  test("missing or wrongly typed members are 400s naming the member", async () => {
    const before = await snapshot();
    expectError(await h.api(ws, "POST", "/pipelines", { clientId: sftp.id, schemaId: schema.id }), 400, "invalid_input", /^name: is required/);
    expectError(await h.api(ws, "POST", "/pipelines", { name: "No client", schemaId: schema.id }), 400, "invalid_input", /^clientId: is required/);
    expectError(await h.api(ws, "POST", "/pipelines", { name: "No schema", clientId: sftp.id }), 400, "invalid_input", /^schemaId: is required/);
    expectError(await create({ isActive: "yes" }), 400, "invalid_input", /^isActive: /);
    expectError(await create({ webhookIds: "wh_1" }), 400, "invalid_input", /^webhookIds: /);
    expect(await snapshot()).toEqual(before);
  });

  test("a duplicate name is a 409 on create and on rename, and nothing changes", async () => {
    const second = await h.ok(ws, "POST", "/pipelines", { name: "Second", clientId: sftp.id, schemaId: schema.id });
    const before = await snapshot();
    expectError(await create({ name: "Existing" }), 409, "conflict", "name: a pipeline named 'Existing' already exists");
    expectError(await create({ name: "EXISTING" }), 409, "conflict", "name: a pipeline named 'EXISTING' already exists");
    expectError(await h.api(ws, "PATCH", `/pipelines/${second.id}`, { name: "Existing", isActive: false }), 409, "conflict", /^name: /);
    expect(await snapshot()).toEqual(before);
    expect(await h.ok(ws, "GET", `/pipelines/${second.id}`)).toEqual(second);
  });

  test("a refused PATCH mappings keeps the stored mappings", async () => {
    expectError(
      await h.api(ws, "PATCH", `/pipelines/${existing.id}`, { mappings: [{ source: "B", target: "b" }] }),
      400,
      "invalid_input",
      /fieldMappings/,
    );
    expectError(
      await h.api(ws, "PATCH", `/pipelines/${existing.id}`, { mappings: { fieldMappings: [{ source: "B", target: "b", transform: "md5" }] } }),
      400,
      "invalid_input",
      /allowed: /,
    );
    expect(await h.ok(ws, "GET", `/pipelines/${existing.id}`)).toEqual(existing);
  });
});

describe("list query", () => {
  test("isActive must be true or false", async () => {
    expectError(await h.api(ws, "GET", "/pipelines?isActive=maybe"), 400, "invalid_input", "isActive: must be true or false");
    expectError(await h.api(ws, "GET", "/pipelines?isActive=1"), 400, "invalid_input", /^isActive: /);
  });

  test("a bad direction, page or limit is a 400 naming the parameter", async () => {
    expectError(await h.api(ws, "GET", "/pipelines?direction=sideways"), 400, "invalid_input", /^direction: /);
    expectError(await h.api(ws, "GET", "/pipelines?limit=101"), 400, "invalid_input", /^limit: /);
    expectError(await h.api(ws, "GET", "/pipelines?page=0"), 400, "invalid_input", /^page: /);
  });

  test("clientId and connectionId that disagree are a 400", async () => {
    expectError(await h.api(ws, "GET", `/pipelines?clientId=${sftp.id}&connectionId=${email.id}`), 400, "invalid_input", /^connectionId: /);
  });

  test("another workspace's connection id as a filter finds nothing", async () => {
    const res = await h.api(ws, "GET", `/pipelines?clientId=${theirs.conn.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers.get("x-total-count")).toBe("0");
  });
});

describe("unknown ids", () => {
  test("GET, PATCH and DELETE of an unknown pipeline are 404", async () => {
    expectError(await h.api(ws, "GET", "/pipelines/pipe_nope"), 404, "not_found", "pipeline 'pipe_nope' not found");
    expectError(await h.api(ws, "PATCH", "/pipelines/pipe_nope", { name: "x" }), 404, "not_found");
    expectError(await h.api(ws, "DELETE", "/pipelines/pipe_nope"), 404, "not_found");
  });

  test("another workspace's pipeline is a 404 on every route and stays as it was", async () => {
    const before = await h.ok(other, "GET", `/pipelines/${theirs.pipeline.id}`);
    expectError(await h.api(ws, "GET", `/pipelines/${theirs.pipeline.id}`), 404, "not_found");
    expectError(await h.api(ws, "PATCH", `/pipelines/${theirs.pipeline.id}`, { isActive: false }), 404, "not_found");
    expectError(await h.api(ws, "DELETE", `/pipelines/${theirs.pipeline.id}`), 404, "not_found");
    expect(await h.ok(other, "GET", `/pipelines/${theirs.pipeline.id}`)).toEqual(before);
  });

  test("a deleted pipeline is a 404 on a second delete", async () => {
    const p = await h.ok(ws, "POST", "/pipelines", { name: "Delete twice", clientId: sftp.id, schemaId: schema.id });
    await h.ok(ws, "DELETE", `/pipelines/${p.id}`);
    expectError(await h.api(ws, "DELETE", `/pipelines/${p.id}`), 404, "not_found");
  });
});
