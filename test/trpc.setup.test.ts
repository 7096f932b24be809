import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { outboundPipeline, readSpaceFile } from "./helpers/outbound";
import { createPipeline, ITEM_SCHEMA, type PipelineFixture, waitForRun } from "./helpers/runs";

/**
 * The tRPC procedures the dashboard's setup pages added: a schema
 * definition checked as a save would check it, the pipelines using a
 * schema, the outbound upload sessions, and a whole file sent through an
 * outbound pipeline. Both databases (TEST_DATABASE_URL).
 */
let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
let out: PipelineFixture;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Mine" });
  other = await h.workspace({ name: "Theirs" });
  out = await outboundPipeline(h, ws, { connectionName: "Depot", name: "Depot out" });
  await createPipeline(h, ws, { connectionId: out.connection.id, name: "Depot in", direction: "inbound" });
}, 60_000);

afterAll(async () => {
  await h?.close();
}, 60_000);

const counts = async () => ({
  schemas: await h.svc.db.read.$count(h.svc.db.t.schemas),
  sessions: await h.svc.db.read.$count(h.svc.db.t.outboundUploads),
  runs: await h.svc.db.read.$count(h.svc.db.t.pipelineRuns),
});

describe("schemas.check", () => {
  test("a valid definition is valid; nothing is stored", async () => {
    const before = await counts();
    expect(await h.trpc(ws).schemas.check({ definition: ITEM_SCHEMA })).toEqual({ valid: true, message: null });
    expect(await counts()).toEqual(before);
  });

  test.each([
    [{ type: "array", items: {} }],
    [{ type: "object" }],
    [{ type: "object", properties: { a: { type: "strin" } } }],
    [{ type: "object", properties: { a: { type: "string" } }, required: ["b"] }],
    [{ type: "object", properties: { a: { type: "string", format: "emial" } } }],
    [{ $schema: "https://example.com/other", type: "object", properties: {} }],
  ])("%j: the message a save would give, as data", async (definition) => {
    const save = await h.request("POST", "/schemas", { key: ws.apiKey, version: "2026-05-25", body: { name: "Probe", definition } });
    expect(save.status).toBe(400);
    expect(await h.trpc(ws).schemas.check({ definition })).toEqual({ valid: false, message: save.body.message });
  });

  test("input that is not a definition is answered the same way", async () => {
    expect(await h.trpc(ws).schemas.check({} as never)).toEqual({ valid: false, message: "definition: is required" });
    expect(await h.trpc(ws).schemas.check({ definition: [] } as never)).toEqual({ valid: false, message: "definition: must be a JSON Schema object" });
  });
});

describe("schemas.pipelines", () => {
  test("the pipelines using the schema, by name; none for an unused one; another workspace's schema is not found", async () => {
    const t = h.trpc(ws);
    const extra = await h.ok(ws, "POST", "/pipelines", { name: "A second user", clientId: out.connection.id, schemaId: out.schema.id, mappings: { fieldMappings: [{ source: "SKU", target: "sku" }] } });
    expect(await t.schemas.pipelines({ id: out.schema.id })).toEqual([
      { id: extra.id, name: "A second user", direction: "inbound", connectionId: out.connection.id, isActive: true },
      { id: out.pipeline.id, name: "Depot out", direction: "outbound", connectionId: out.connection.id, isActive: true },
    ]);
    const unused = await t.schemas.create({ name: "Unused", definition: ITEM_SCHEMA });
    expect(await t.schemas.pipelines({ id: unused.id })).toEqual([]);
    const err = await h.trpc(other).schemas.pipelines({ id: out.schema.id }).catch((e) => e);
    expect(err.code).toBe("NOT_FOUND");
    expect(err.message).toBe(`schema '${out.schema.id}' not found`);
  });
});

describe("outbound.sendFile and outbound.list", () => {
  test("a CSV file goes through the outbound pipeline: one completed session, its run delivers the file", async () => {
    const t = h.trpc(ws);
    const done = await t.outbound.sendFile({
      connectionName: "depot",
      pipelineName: "Depot out",
      file: { filename: "orders.csv", text: "SKU,Qty,Name\na-1,3,Bolt\nb-2,10,Nut\n" },
      outputFilename: "orders-out.csv",
    });
    expect(done).toMatchObject({ status: "completed", filename: "orders.json", outputFilename: "orders-out.csv", outputFormat: "csv" });
    await waitForRun(h, ws, done.runId, "delivered");
    const delivered = await readSpaceFile(h, ws, out.connection.id, "outbound/orders-out.csv");
    expect(new TextDecoder().decode(delivered!).split(/\r?\n/)).toEqual(["sku,qty,name", "A-1,3,Bolt", "B-2,10,Nut", ""]);

    const list = await t.outbound.list();
    expect(list.pagination).toMatchObject({ page: 1, total: 1 });
    expect(list.data[0]).toMatchObject({ uploadId: done.uploadId, status: "completed", partsReceived: 1, totalParts: 1, runId: done.runId, connectionName: "Depot" });
    expect(list.data[0]!.parts[0]!.rowCount).toBe(2);
  });

  test("a JSON file (base64) too; the list is newest first and filters; another workspace sees none of it", async () => {
    const t = h.trpc(ws);
    const json = JSON.stringify([{ SKU: "z-9", Qty: 1, Name: "Pin" }]);
    const done = await t.outbound.sendFile({ connectionName: "Depot", pipelineName: "Depot out", file: { filename: "one.json", base64: Buffer.from(json).toString("base64") } });
    expect(done.outputFilename).toBe("one.json");
    const list = await t.outbound.list({ limit: 10 });
    expect(list.data.map((u) => u.uploadId)[0]).toBe(done.uploadId);
    expect((await t.outbound.list({ status: "failed" })).data).toEqual([]);
    expect((await t.outbound.list({ pipelineId: out.pipeline.id })).pagination.total).toBe(2);
    expect((await h.trpc(other).outbound.list()).data).toEqual([]);
    const bad = await t.outbound.list({ status: "done" } as never).catch((e) => e);
    expect(bad.message).toBe("status: must be one of initiated, completed, failed, expired");
  });

  test.each([
    ["an inbound pipeline", { pipelineName: "Depot in" }, "pipelineName: pipeline 'Depot in' is inbound; outbound uploads need a pipeline with direction outbound"],
    ["an unknown connection", { connectionName: "Nowhere" }, "connectionName: no connection of this workspace has that name"],
    ["a file that is not JSON or CSV rows", { file: { filename: "a.json", text: "{not json" } }, /^file: /],
    ["a file without rows", { file: { filename: "a.csv", text: "SKU,Qty\n" } }, "file: has no rows to send"],
    ["no file", { file: undefined }, "file: is required"],
    ["both text and base64", { file: { filename: "a.csv", text: "a\n1\n", base64: "YQ==" } }, "file.text: give exactly one of text or base64"],
  ])("%s: refused, nothing started", async (_, change, message) => {
    const before = await counts();
    const err = await h
      .trpc(ws)
      .outbound.sendFile({ connectionName: "Depot", pipelineName: "Depot out", file: { filename: "a.csv", text: "SKU,Qty\nA,1\n" }, ...change } as never)
      .catch((e) => e);
    expect(err.code).toMatch(/BAD_REQUEST|NOT_FOUND/);
    if (typeof message === "string") expect(err.message).toBe(message);
    else expect(err.message).toMatch(message);
    expect(await counts()).toEqual(before);
  });
});
