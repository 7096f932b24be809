// The REST client (packages/client) against the real service on a real port: every helper a user calls.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { createFpsClient, FpsError, type FpsClient, verifyWebhook } from "../packages/client/src/index";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { freePort, serve } from "./helpers/live";
import { createPipeline, ITEMS_CSV } from "./helpers/runs";

let h: Harness;
let ws: TestWorkspace;
let server: ReturnType<typeof serve>;
let fps: FpsClient;
let base: string;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  h = await Harness.start({ env: { PUBLIC_URL: base } });
  ws = await h.workspace();
  server = serve(h, port);
  fps = createFpsClient({ baseUrl: base, apiKey: ws.apiKey, retry: { retries: 2, minDelayMs: 10 } });
});

afterAll(async () => {
  server?.stop(true);
  await h?.close();
});

describe("the typed client", () => {
  test("calls carry the key and the newest version; a failed call throws FpsError with the service's fields", async () => {
    const { data, response } = await fps.api.GET("/connections");
    expect(Array.isArray(data)).toBe(true);
    expect(response.headers.get("service-version")).toBe("2026-05-25");
    const err = await fps.api.GET("/pipelines/{id}", { params: { path: { id: "pipe_nope" } } }).catch((e) => e);
    expect(err).toBeInstanceOf(FpsError);
    expect(err.statusCode).toBe(404);
    expect(err.error).toBe("not_found");
    expect(err.message).toContain("pipe_nope");
    const bad = createFpsClient({ baseUrl: base, apiKey: "fps_wrong_key" });
    const unauth = await bad.api.GET("/connections").catch((e) => e);
    expect(unauth).toBeInstanceOf(FpsError);
    expect(unauth.statusCode).toBe(401);
  });

  test("paginate walks every style: bare arrays with X-Total-Pages, {data, pagination}, and cursors", async () => {
    for (let i = 0; i < 5; i++) await fps.api.POST("/connections", { body: { name: `Pager ${i}` } });
    const names: string[] = [];
    for await (const c of fps.paginate("/connections", { query: { limit: 2 } })) names.push(c.name);
    expect(names.filter((n) => n.startsWith("Pager")).sort()).toEqual(["Pager 0", "Pager 1", "Pager 2", "Pager 3", "Pager 4"]);
    for (let i = 0; i < 3; i++) await fps.api.POST("/schemas", { body: { name: `S${i}`, definition: { type: "object", properties: {} } } });
    const schemas: string[] = [];
    for await (const s of fps.paginate("/schemas", { query: { limit: 1 } })) schemas.push(s.name);
    expect(schemas.sort()).toEqual(["S0", "S1", "S2"]);
  });

  test("uploadRun streams a file with progress; waitForRun follows it live to completed; search and downloads work", async () => {
    const { pipeline } = await createPipeline(h, ws);
    const file = new File([ITEMS_CSV], "items.csv", { type: "text/csv" });
    const seen: number[] = [];
    const run = await fps.uploadRun(pipeline.id, file, { onProgress: (sent) => seen.push(sent) });
    expect(run.status).toBe("pending");
    expect(seen.at(-1)).toBe(file.size);
    const statuses: string[] = [];
    const done = await fps.waitForRun(run.id, { timeoutMs: 20_000, onUpdate: (r) => statuses.push(r.status) });
    expect(done.status).toBe("completed");
    expect(statuses.at(-1)).toBe("completed");
    const processed = await (await fps.download("processed", run.id)).json();
    expect(processed.map((r: { sku: string }) => r.sku)).toEqual(["A-1", "B-2", "C-3"]);
    expect(await (await fps.download("original", run.id)).text()).toBe(ITEMS_CSV);
    const hits = [];
    for await (const hit of fps.searchAll({ pipelineRunIds: [run.id], searchTerm: "nut", limit: 1 })) hits.push(hit);
    expect(hits.map((x) => x.rowData)).toEqual([{ sku: "B-2", qty: 10, name: "Nut" }]);
  });

  test("followRun yields the run's states in order, the last one final", async () => {
    const { pipeline } = await createPipeline(h, ws);
    const run = await fps.uploadRun(pipeline.id, new Blob(["SKU,Qty,Name\nx,notanumber,y\n"]), { filename: "bad.csv" });
    const states: string[] = [];
    for await (const r of fps.followRun(run.id)) states.push(r.status);
    expect(states.at(-1)).toBe("failed");
    expect(new Set(states).size).toBe(states.length);
  });

  test("an upload retried under one idempotency key makes one run", async () => {
    const { pipeline } = await createPipeline(h, ws);
    const key = crypto.randomUUID();
    const a = await fps.uploadRun(pipeline.id, new Blob([ITEMS_CSV]), { filename: "a.csv", idempotencyKey: key });
    const b = await fps.uploadRun(pipeline.id, new Blob([ITEMS_CSV]), { filename: "a.csv", idempotencyKey: key });
    expect(b.id).toBe(a.id);
  });

  test("uploadDocument sends a file through the presigned ticket and it lands in the space", async () => {
    const { data: conn } = await fps.api.POST("/connections", { body: { name: "Docs partner" } });
    const bytes = new Uint8Array(300_000).map((_, i) => i % 251);
    const obj = await fps.uploadDocument(new File([bytes], "blob.bin"), { connectionId: conn!.id, path: "reports" });
    expect(obj.path).toBe("reports/blob.bin");
    expect(obj.size).toBe(bytes.byteLength);
    const entries = [];
    for await (const e of fps.paginate("/documents", { query: { connectionId: conn!.id, path: "reports" } })) entries.push(e.path);
    expect(entries).toEqual(["reports/blob.bin"]);
  });

  test("sendOutbound splits rows into parts, completes the session and the run is delivered", async () => {
    const { pipeline, connection } = await createPipeline(h, ws, { direction: "outbound", mappings: { fieldMappings: [{ source: "sku", target: "sku" }, { source: "qty", target: "qty" }] }, definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" } } } });
    async function* rows() {
      for (let i = 0; i < 300; i++) yield { sku: `s-${i}`, qty: i };
    }
    const parts: number[] = [];
    const done = await fps.sendOutbound(rows(), { connectionName: connection.name, pipelineName: pipeline.name, outputFormat: "csv", partBytes: 2048, onProgress: (n) => parts.push(n) });
    expect(parts.length).toBeGreaterThan(3);
    const run = await fps.waitForRun(done.runId, { timeoutMs: 20_000 });
    expect(run.status).toBe("delivered");
  });

  test("verifyWebhook accepts a Standard Webhooks signature made with the secret and refuses a forged one", () => {
    const secret = `whsec_${Buffer.from("a".repeat(32)).toString("base64")}`;
    const body = JSON.stringify({ type: "pipeline_run.completed", timestamp: new Date().toISOString(), data: { id: "run_1" } });
    const id = "msg_1";
    const at = new Date();
    const signature = new Webhook(secret).sign(id, at, body);
    const headers = { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signature };
    expect(verifyWebhook(secret, body, headers).data).toEqual({ id: "run_1" });
    expect(() => verifyWebhook(secret, body.replace("run_1", "run_2"), headers)).toThrow();
  });

  test("retries a 503 that carries Retry-After, then answers; a POST without a key is not retried", async () => {
    let calls = 0;
    const flaky = Bun.serve({
      port: 0,
      fetch(req) {
        calls++;
        if (calls < 3) return new Response(JSON.stringify({ message: "down", statusCode: 503, error: "unavailable" }), { status: 503, headers: { "retry-after": "0", "content-type": "application/json" } });
        return Response.json([{ id: "conn_1", name: "x", seen: req.headers.get("x-api-key") }]);
      },
    });
    try {
      const c = createFpsClient({ baseUrl: `http://127.0.0.1:${flaky.port}`, apiKey: "k", retry: { retries: 3, minDelayMs: 1 } });
      const { data } = await c.api.GET("/connections");
      expect(calls).toBe(3);
      expect((data as unknown as { seen: string }[])[0]!.seen).toBe("k");
      calls = 0;
      const none = createFpsClient({ baseUrl: `http://127.0.0.1:${flaky.port}`, apiKey: "k", retry: { retries: 0 } });
      const err = await none.api.GET("/connections").catch((e) => e);
      expect(err.statusCode).toBe(503);
      expect(err.retryAfter).toBe(0);
      expect(calls).toBe(1);
    } finally {
      flaky.stop(true);
    }
  });
});
