import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { trpcClient as officialTrpc } from "./helpers/trpc-client";
import { outboundPipeline, readSpaceFile, startUpload, uploadAll } from "./helpers/outbound";
import { createPipeline, ITEM_SCHEMA, type PipelineFixture, runToEnd, waitForRun } from "./helpers/runs";

/**
 * POST /pipeline-runs/{id}/reprocess: a new run from a run's original file,
 * under the current version or a named one (its stored mappings and schema
 * definition, not today's), linked to the first, compared with the delta;
 * the same through GraphQL and the official tRPC client.
 */

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are compared member by member
type Any = any;

let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;
/** The first run: processed under version 1 (qty required: the row without one is skipped). */
let first: Any;

const CSV = "SKU,Qty,Name\na-1,3,bolt\nb-2,,nut\nc-3,7,washer\n";
const V1_MAPPINGS = {
  fieldMappings: [
    { source: "SKU", target: "sku", transform: "uppercase" },
    { source: "Qty", target: "qty", transform: "integer" },
    { source: "Name", target: "name", transform: "trim" },
  ],
  validations: { onInvalidRow: "skip" },
};

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Owner" });
  fx = await createPipeline(h, ws, { mappings: V1_MAPPINGS });
  first = await runToEnd(h, ws, fx.pipeline.id, CSV, "orders.csv");
  expect(first.status).toBe("completed");
  expect(first.metadata.rows).toMatchObject({ total: 3, valid: 2, skipped: 1 });
  // Version 2: names upper-cased.
  const v2 = await h.ok(ws, "PATCH", `/pipelines/${fx.pipeline.id}`, {
    mappings: { fieldMappings: V1_MAPPINGS.fieldMappings.map((m) => (m.target === "name" ? { ...m, transform: "uppercase" } : m)) },
  });
  expect(v2.version).toBe(2);
});
afterAll(() => h.close());

const reprocess = (runId: string, body?: unknown, w: TestWorkspace = ws) => h.api(w, "POST", `/pipeline-runs/${runId}/reprocess`, body);
async function reprocessed(runId: string, body?: unknown): Promise<Any> {
  const r = await reprocess(runId, body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return waitForRun(h, ws, r.body.id, ["completed", "delivered", "failed"]);
}
/** The processed file, through its link (the local store's links are served by the service itself). */
const processedRows = async (runId: string): Promise<Any[]> => {
  const link = await h.ok(ws, "GET", `/files/pipeline-runs/${runId}/processed`);
  return (await h.service.http.handle(new Request(link.url))).json();
};
const delta = (base: string, compare: string) => h.ok(ws, "GET", `/pipeline-runs/delta?baseRunId=${base}&compareRunId=${compare}`);

const trpcClient = (w: TestWorkspace) => officialTrpc(h, w);

describe("reprocess", () => {
  test("under the current version: a new run linked to the first, from the same file; the first is kept as it was", async () => {
    const r = await reprocess(first.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: "pending", filename: "orders.csv", reprocessOf: first.id, pipelineVersion: 2, pipelineId: fx.pipeline.id, size: first.size });
    expect(r.body.id).not.toBe(first.id);
    const done = await waitForRun(h, ws, r.body.id, ["completed", "failed"]);
    expect(done.status).toBe("completed");
    expect(done.pipelineVersion).toBe(2);
    expect(done.metadata.rows).toMatchObject({ total: 3, valid: 2, skipped: 1 });
    expect(await processedRows(done.id)).toEqual([
      { sku: "A-1", qty: 3, name: "BOLT" },
      { sku: "C-3", qty: 7, name: "WASHER" },
    ]);
    const kept = await h.ok(ws, "GET", `/pipeline-runs/${first.id}`);
    expect(kept).toEqual(first);
    expect(await processedRows(first.id)).toEqual([
      { sku: "A-1", qty: 3, name: "bolt" },
      { sku: "C-3", qty: 7, name: "washer" },
    ]);

    // The delta across the pair: every row changed (one removed and one added each).
    const d = await delta(first.id, done.id);
    expect(d.summary).toEqual({ baseCount: 2, compareCount: 2, added: 2, removed: 2, unchanged: 0 });
    expect(d.changes).toEqual([
      { type: "removed", rowIndex: 0, record: { sku: "A-1", qty: 3, name: "bolt" } },
      { type: "added", rowIndex: 0, record: { sku: "A-1", qty: 3, name: "BOLT" } },
      { type: "removed", rowIndex: 1, record: { sku: "C-3", qty: 7, name: "washer" } },
      { type: "added", rowIndex: 1, record: { sku: "C-3", qty: 7, name: "WASHER" } },
    ]);
  });

  test("under a named version: its stored mappings and schema definition, not today's", async () => {
    // Version 3: the schema no longer requires qty, so today the row without one is valid.
    await h.ok(ws, "PATCH", `/schemas/${fx.schema.id}`, { definition: { ...ITEM_SCHEMA, required: ["sku"] } });
    expect((await h.ok(ws, "GET", `/pipelines/${fx.pipeline.id}`)).version).toBe(3);
    const now = await reprocessed(first.id);
    expect(now.pipelineVersion).toBe(3);
    expect(now.metadata.rows).toMatchObject({ total: 3, valid: 3, skipped: 0 });

    const old = await reprocessed(first.id, { version: 1 });
    expect(old).toMatchObject({ status: "completed", pipelineVersion: 1, reprocessOf: first.id });
    expect(old.metadata.rows).toMatchObject({ total: 3, valid: 2, skipped: 1 });
    // Version 1 again gives the first run's rows exactly.
    expect((await delta(first.id, old.id)).summary).toEqual({ baseCount: 2, compareCount: 2, added: 0, removed: 0, unchanged: 2 });
    const d = await delta(old.id, now.id);
    expect(d.summary).toEqual({ baseCount: 2, compareCount: 3, added: 3, removed: 2, unchanged: 0 });

    // A reprocessed run can itself be reprocessed; the link names the run its file came from.
    const again = await reprocessed(old.id, { version: 2 });
    expect(again).toMatchObject({ reprocessOf: old.id, pipelineVersion: 2, status: "completed" });
  });

  test("a retried reprocess is processed under the pipeline as it is now", async () => {
    // Version 4 maps a column the file lacks: the header check fails the run.
    await h.ok(ws, "PATCH", `/pipelines/${fx.pipeline.id}`, { mappings: { fieldMappings: [...V1_MAPPINGS.fieldMappings, { source: "Colour", target: "colour" }] } });
    const failed = await reprocessed(first.id);
    expect(failed).toMatchObject({ status: "failed", pipelineVersion: 4 });
    expect(failed.errorMessage).toContain("Colour");
    await h.ok(ws, "PATCH", `/pipelines/${fx.pipeline.id}`, { mappings: { fieldMappings: V1_MAPPINGS.fieldMappings } });
    await h.ok(ws, "POST", `/pipeline-runs/${failed.id}/retry`);
    const retried = await waitForRun(h, ws, failed.id, ["completed", "failed"]);
    expect(retried).toMatchObject({ status: "completed", pipelineVersion: 5, reprocessOf: first.id });
  });

  test("the audit log records who reprocessed what, under which version", async () => {
    const events = await h.ok(ws, "GET", "/audit-events?action=run.reprocess&limit=100");
    expect(events.data.length).toBeGreaterThanOrEqual(5);
    expect(events.data[0]).toMatchObject({ resourceType: "run", fields: ["reprocessOf", "version"], actor: { type: "key", id: ws.keyId }, surface: "rest" });
  });

  test("an Idempotency-Key makes one run however often it is sent; another body with it is a 409", async () => {
    const headers = { "idempotency-key": "reprocess-orders-1", "content-type": "application/json" };
    const send = (body: unknown) => h.request("POST", `/pipeline-runs/${first.id}/reprocess`, { key: ws.apiKey, version: "2026-05-25", headers, body });
    const before = (await h.ok(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}`)).pagination.total;
    const a = await send({ version: 1 });
    const b = await send({ version: 1 });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.body.id).toBe(a.body.id);
    const c = await send({ version: 2 });
    expect(c.status).toBe(409);
    expect(c.body.message).toContain("reprocess-orders-1");
    expect((await h.ok(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}`)).pagination.total).toBe(before + 1);
    await waitForRun(h, ws, a.body.id, ["completed", "failed"]);
  });
});

describe("outbound", () => {
  test("an outbound run reprocessed is delivered again, under the new mappings, with the name and format it was sent with", async () => {
    const out = await outboundPipeline(h, ws, { connectionName: "Out partner", name: "Items out" });
    const created = await startUpload(h, ws, { connectionName: "Out partner", pipelineName: "Items out", totalParts: 1, outputFilename: "week.csv" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const done = await uploadAll(h, ws, created.body.uploadId, [[{ SKU: "x-1", Qty: "2", Name: "Pin" }]]);
    const sent = await waitForRun(h, ws, done.runId, ["delivered", "failed"]);
    expect(sent.status).toBe("delivered");
    const file = async () => new TextDecoder().decode((await readSpaceFile(h, ws, out.connection.id, "outbound/week.csv"))!);
    expect(await file()).toBe("sku,qty,name\r\nX-1,2,Pin\r\n");
    await h.ok(ws, "PATCH", `/pipelines/${out.pipeline.id}`, {
      mappings: { fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty", transform: "integer" }, { source: "Name", target: "name", transform: "uppercase" }] },
    });
    const again = await reprocessed(sent.id);
    expect(again).toMatchObject({ status: "delivered", reprocessOf: sent.id, pipelineVersion: 2, pipelineDirection: "outbound" });
    expect(await file()).toBe("sku,qty,name\r\nx-1,2,PIN\r\n");
  });
});

describe("GraphQL and tRPC", () => {
  test("reprocessRun and runs.reprocess make the same kind of run REST does", async () => {
    const g = await h.graphql(ws.apiKey, `mutation($id: ID!) { reprocessRun(id: $id, version: 1) { id status reprocessOf pipelineVersion filename } }`, { id: first.id });
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.reprocessRun).toMatchObject({ status: "pending", reprocessOf: first.id, pipelineVersion: 1, filename: "orders.csv" });
    const viaGraphql = await waitForRun(h, ws, g.body.data.reprocessRun.id, ["completed", "failed"]);

    const t = trpcClient(ws);
    const started = await t.runs.reprocess.mutate({ id: first.id, version: 1 });
    expect(started).toMatchObject({ status: "pending", reprocessOf: first.id, pipelineVersion: 1 });
    const viaTrpc = await waitForRun(h, ws, started.id, ["completed", "failed"]);
    for (const run of [viaGraphql, viaTrpc]) expect((await delta(first.id, run.id)).summary).toMatchObject({ added: 0, removed: 0, unchanged: 2 });

    const versions = await t.pipelines.versions.query({ id: fx.pipeline.id, limit: 1 });
    expect(versions.data[0]!.version).toBe((await t.pipelines.get.query({ id: fx.pipeline.id })).version);
  });
});
