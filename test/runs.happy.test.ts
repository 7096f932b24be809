import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { RunEvent } from "../src/adapters/events/port";
import { ingest } from "../src/services/run-path";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, type PipelineFixture, runToEnd, startUpload, waitForRun } from "./helpers/runs";

let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;

const RUN_FIELDS = [
  "client",
  "clientId",
  "createdAt",
  "filename",
  "id",
  "isPipelineDeleted",
  "metadata",
  "mimetype",
  "path",
  "pipelineDirection",
  "pipelineId",
  "pipelineName",
  "processedAt",
  "schemaId",
  "size",
  "status",
  "updatedAt",
];

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  fx = await createPipeline(h, ws, { connectionName: "Acme Warehouse" });
});

afterAll(async () => {
  await h.close();
});

describe("an uploaded CSV runs to completed", () => {
  test("pending on upload, then processing, then completed with metadata; every change published", async () => {
    const events: RunEvent[] = [];
    const abort = new AbortController();
    const sub = h.svc.events.subscribe({ workspaceId: ws.workspaceId }, abort.signal);
    const reading = (async () => {
      for await (const e of sub) {
        events.push(e);
        if (events.length === 3) break;
      }
    })();

    const run = await startUpload(h, ws, fx.pipeline.id, ITEMS_CSV, "items.csv");
    expect(run.id).toMatch(/^run_/);
    expect(run).toMatchObject({
      filename: "items.csv",
      status: "pending",
      clientId: fx.connection.id,
      size: ITEMS_CSV.length,
      mimetype: "text/csv",
      pipelineDirection: "inbound",
      schemaId: fx.schema.id,
      pipelineId: fx.pipeline.id,
      pipelineName: fx.pipeline.name,
      isPipelineDeleted: false,
      client: { name: "Acme Warehouse" },
    });
    expect(run.path).toContain(`/runs/${run.id}/original/items.csv`);
    expect("errorMessage" in run).toBe(false);
    expect("processedAt" in run).toBe(false);
    // The version is the one current when it is processed: not known before.
    expect("pipelineVersion" in run).toBe(false);

    const done = await waitForRun(h, ws, run.id, ["completed", "failed"]);
    expect(done.status, JSON.stringify(done)).toBe("completed");
    expect(Object.keys(done).sort()).toEqual([...RUN_FIELDS, "pipelineVersion"].sort());
    expect(done.pipelineVersion).toBe(1);
    expect(done.processedAt).toBe(h.clock.now().toISOString());
    expect(done.metadata.rows).toEqual({ total: 3, valid: 3, invalid: 0, skipped: 0, quarantined: 0 });
    expect(done.metadata.errors).toEqual([]);
    expect(done.metadata.input).toMatchObject({ format: "csv" });
    expect(done.metadata.output).toMatchObject({ format: "json", rows: 3 });
    expect(done.metadata.output.size).toBeGreaterThan(0);
    for (const k of ["queuedMs", "processMs", "totalMs"]) expect(typeof done.metadata.timings[k]).toBe("number");
    expect(done.metadata.attempts).toBe(1);

    // The processed file holds the mapped rows.
    const row = (await h.svc.db.read.select().from(h.svc.db.t.pipelineRuns)).find((r) => r.id === run.id)!;
    const stream = await h.svc.storage.get(row.processedKey!);
    const processed = JSON.parse(await new Response(stream!).text());
    expect(processed).toEqual([
      { sku: "A-1", qty: 3, name: "Bolt" },
      { sku: "B-2", qty: 10, name: "Nut" },
      { sku: "C-3", qty: 7, name: "Washer" },
    ]);

    await reading;
    abort.abort();
    const mine = events.filter((e) => e.runId === run.id);
    // The upload and the worker publish independently (on Postgres the worker may be quicker than the upload's own event).
    expect(mine.map((e) => `${e.previousStatus} -> ${e.status}`).sort()).toEqual(
      ["null -> pending", "pending -> processing", "processing -> completed"].sort(),
    );
    expect(mine.every((e) => e.workspaceId === ws.workspaceId && e.pipelineId === fx.pipeline.id)).toBe(true);
  });

  test("GET one run answers what the list shows", async () => {
    const run = await runToEnd(h, ws, fx.pipeline.id);
    const list = await h.ok(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}`);
    expect(list.data.find((r: any) => r.id === run.id)).toEqual(run);
    const all = await h.ok(ws, "GET", "/pipeline-runs");
    expect(all.data.find((r: any) => r.id === run.id)).toEqual(run);
  });
});

describe("lists", () => {
  let w: TestWorkspace;
  let a: PipelineFixture;
  let b: PipelineFixture;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    w = await h.workspace({ name: "Lists" });
    a = await createPipeline(h, w, { connectionName: "North Depot", name: "Alpha" });
    b = await createPipeline(h, w, { connectionName: "South Yard", name: "Beta" });
    h.clock.set("2026-05-01T08:00:00Z");
    ids.a1 = (await runToEnd(h, w, a.pipeline.id)).id;
    h.clock.set("2026-05-02T08:00:00Z");
    ids.a2 = (await runToEnd(h, w, a.pipeline.id, "SKU,Qty,Name\nx,notanumber,Nut\n", "bad.csv")).id;
    h.clock.set("2026-05-03T08:00:00Z");
    ids.b1 = (await runToEnd(h, w, b.pipeline.id)).id;
    h.clock.set("2026-05-04T08:00:00Z");
    // An outbound run, started the way the outbound transport will start one.
    const out = await createPipeline(h, w, { connectionId: a.connection.id, name: "Gamma out", direction: "outbound" });
    ids.o1 = (
      await ingest(h.svc, {
        door: "outbound",
        workspaceId: w.workspaceId,
        pipelineId: out.pipeline.id,
        filename: "export.json",
        body: JSON.stringify([{ SKU: "z-9", Qty: "4", Name: "Pin" }]),
      })
    ).row.id;
    await waitForRun(h, w, ids.o1, ["delivered", "failed"]);
  });

  const listIds = async (query: string, version = "2026-05-25") => {
    const res = await h.request("GET", `/pipeline-runs${query}`, { key: w.apiKey, version });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.map((r: any) => r.id);
  };

  test("newest first, with pagination", async () => {
    expect(await listIds("")).toEqual([ids.o1, ids.b1, ids.a2, ids.a1]);
    const page = await h.ok(w, "GET", "/pipeline-runs?page=2&limit=3");
    expect(page.data.map((r: any) => r.id)).toEqual([ids.a1]);
    expect(page.pagination).toEqual({ page: 2, limit: 3, total: 4, totalPages: 2 });
  });

  test("filters: pipelineId, status, direction, clientId, connectionName and clientName, from and to", async () => {
    expect(await listIds(`?pipelineId=${a.pipeline.id}`)).toEqual([ids.a2, ids.a1]);
    expect(await listIds("?status=failed")).toEqual([ids.a2]);
    expect(await listIds("?status=completed")).toEqual([ids.b1, ids.a1]);
    expect(await listIds("?status=delivered")).toEqual([ids.o1]);
    expect(await listIds("?direction=outbound")).toEqual([ids.o1]);
    expect(await listIds("?direction=inbound")).toEqual([ids.b1, ids.a2, ids.a1]);
    expect(await listIds(`?clientId=${b.connection.id}`)).toEqual([ids.b1]);
    expect(await listIds("?connectionName=NORTH")).toEqual([ids.o1, ids.a2, ids.a1]);
    expect(await listIds("?clientName=yard")).toEqual([ids.b1]);
    expect(await listIds("?connectionName=%25")).toEqual([]);
    expect(await listIds("?from=2026-05-02&to=2026-05-03")).toEqual([ids.b1, ids.a2]);
    expect(await listIds("?from=2026-05-02T08:00:00.001Z")).toEqual([ids.o1, ids.b1]);
    expect(await listIds("?to=2026-05-01T08:00:00Z")).toEqual([ids.a1]);
    expect(await listIds(`?pipelineId=${a.pipeline.id}&status=completed`)).toEqual([ids.a1]);
  });

  test("one pipeline's runs answer {data, pagination} and take the same filters", async () => {
    const res = await h.ok(w, "GET", `/pipeline-runs/pipeline/${a.pipeline.id}?limit=1`);
    expect(Object.keys(res).sort()).toEqual(["data", "pagination"]);
    expect(res.data.map((r: any) => r.id)).toEqual([ids.a2]);
    expect(res.pagination).toEqual({ page: 1, limit: 1, total: 2, totalPages: 2 });
    const failed = await h.ok(w, "GET", `/pipeline-runs/pipeline/${a.pipeline.id}?status=failed`);
    expect(failed.data.map((r: any) => r.id)).toEqual([ids.a2]);
  });

  test("an outbound run ends delivered; a 2024-09-01 caller sees it completed and finds it under completed", async () => {
    const latest = await h.ok(w, "GET", `/pipeline-runs/${ids.o1}`);
    expect(latest.status).toBe("delivered");
    expect(latest.pipelineDirection).toBe("outbound");
    expect(latest.metadata.delivery).toMatchObject({ connectionId: a.connection.id, format: "json" });
    const legacy = await h.request("GET", `/pipeline-runs/${ids.o1}`, { key: w.apiKey, version: "2024-09-01" });
    expect(legacy.body.status).toBe("completed");
    expect(await listIds("?status=completed", "2024-09-01")).toEqual([ids.o1, ids.b1, ids.a1]);
    const legacyList = await h.request("GET", "/pipeline-runs", { key: w.apiKey, version: "2024-09-01" });
    expect(legacyList.body.data.map((r: any) => r.status)).not.toContain("delivered");
  });

  test("a failed run says why", async () => {
    const failed = await h.ok(w, "GET", `/pipeline-runs/${ids.a2}`);
    expect(failed.status).toBe("failed");
    expect(failed.errorMessage).toMatch(/qty|Qty/);
    expect(failed.metadata.rows.invalid).toBe(1);
    expect(failed.metadata.errors[0]).toMatchObject({ inputRow: 1 });
  });
});

describe("names the run reports", () => {
  test("client.name follows the connection's renames, then falls back to the name kept on the run", async () => {
    const w = await h.workspace({ name: "Names" });
    const p = await createPipeline(h, w, { connectionName: "Old Name" });
    const run = await runToEnd(h, w, p.pipeline.id);
    expect(run.client).toEqual({ name: "Old Name" });
    await h.ok(w, "PATCH", `/connections/${p.connection.id}`, { name: "New Name" });
    expect((await h.ok(w, "GET", `/pipeline-runs/${run.id}`)).client).toEqual({ name: "New Name" });
    expect((await h.ok(w, "GET", "/pipeline-runs?connectionName=new")).data.map((r: any) => r.id)).toEqual([run.id]);

    await h.ok(w, "DELETE", `/pipelines/${p.pipeline.id}`);
    await h.ok(w, "DELETE", `/connections/${p.connection.id}`);
    const orphan = await h.ok(w, "GET", `/pipeline-runs/${run.id}`);
    expect(orphan.client).toEqual({ name: "Old Name" });
    expect(orphan.clientId).toBe(p.connection.id);
  });

  test("a deleted pipeline's runs report DELETED PIPELINE and stay listed under its id", async () => {
    const w = await h.workspace({ name: "Deleted" });
    const p = await createPipeline(h, w);
    const run = await runToEnd(h, w, p.pipeline.id);
    expect(run.pipelineName).toBe(p.pipeline.name);
    await h.ok(w, "DELETE", `/pipelines/${p.pipeline.id}`);
    const got = await h.ok(w, "GET", `/pipeline-runs/${run.id}`);
    expect(got).toMatchObject({ pipelineName: "DELETED PIPELINE", isPipelineDeleted: true, pipelineId: p.pipeline.id, status: "completed" });
    const list = await h.ok(w, "GET", `/pipeline-runs/pipeline/${p.pipeline.id}`);
    expect(list.data.map((r: any) => [r.id, r.pipelineName])).toEqual([[run.id, "DELETED PIPELINE"]]);
  });

  test("a pipeline renamed after the run reports its current name", async () => {
    const w = await h.workspace({ name: "Renamed" });
    const p = await createPipeline(h, w, { name: "Before" });
    const run = await runToEnd(h, w, p.pipeline.id);
    await h.ok(w, "PATCH", `/pipelines/${p.pipeline.id}`, { name: "After" });
    expect((await h.ok(w, "GET", `/pipeline-runs/${run.id}`)).pipelineName).toBe("After");
  });
});

describe("acknowledge", () => {
  test("from completed and from failed: 200 with the run; again is still 200", async () => {
    const completed = await runToEnd(h, ws, fx.pipeline.id);
    const failed = await runToEnd(h, ws, fx.pipeline.id, "SKU,Qty\nx,nope\n", "bad.csv");
    expect(failed.status).toBe("failed");
    for (const run of [completed, failed]) {
      h.clock.advance(1000);
      const acked = await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
      expect(acked).toEqual({ ...run, status: "acknowledged", updatedAt: h.clock.now().toISOString() });
      const again = await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
      expect(again).toEqual(acked);
    }
    const listed = await h.ok(ws, "GET", "/pipeline-runs?status=acknowledged");
    expect(listed.data.map((r: any) => r.id).sort()).toEqual([completed.id, failed.id].sort());
  });
});

describe("retry", () => {
  test("a run failed on bad input, retried after the schema is fixed, completes: still one run", async () => {
    const w = await h.workspace({ name: "Retry" });
    const p = await createPipeline(h, w, {
      mappings: { fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty" }] },
    });
    const csv = "SKU,Qty\na-1,3\nb-2,many\n";
    const failed = await runToEnd(h, w, p.pipeline.id, csv, "stock.csv");
    expect(failed.status).toBe("failed");
    expect(failed.errorMessage).toBeTruthy();

    // qty arrives as text: the schema is changed to take text.
    await h.ok(w, "PATCH", `/schemas/${p.schema.id}`, {
      definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "string" } }, required: ["sku", "qty"] },
    });
    const retried = await h.ok(w, "POST", `/pipeline-runs/${failed.id}/retry`);
    expect(retried.id).toBe(failed.id);
    expect(retried.status).toBeOneOf(["pending", "processing", "completed"]);
    expect("errorMessage" in retried).toBe(false);
    expect("processedAt" in retried).toBe(false);

    const done = await waitForRun(h, w, failed.id, ["completed", "failed"]);
    expect(done.status, JSON.stringify(done)).toBe("completed");
    expect(done.metadata.rows).toMatchObject({ total: 2, valid: 2, invalid: 0 });
    expect(done.metadata.attempts).toBe(2);
    expect(done.metadata.history).toHaveLength(1);
    expect(done.metadata.history[0]).toMatchObject({ attempt: 1, errorMessage: failed.errorMessage });
    const list = await h.ok(w, "GET", `/pipeline-runs/pipeline/${p.pipeline.id}`);
    expect(list.data.map((r: any) => r.id)).toEqual([failed.id]);

    expect((await h.api(w, "POST", `/pipeline-runs/${failed.id}/retry`)).status).toBe(409);
  });
});
