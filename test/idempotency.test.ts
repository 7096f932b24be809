import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { purgeIdempotencyKeys } from "../src/services/idempotency";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV } from "./helpers/runs";

const SCHEMA = { type: "object", properties: { a: { type: "string" } } };

describe("Idempotency-Key", () => {
  let h: Harness;
  let ws: TestWorkspace;
  let other: TestWorkspace;
  const post = (w: TestWorkspace, path: string, body: unknown, key: string | null) =>
    h.request("POST", path, { key: w.apiKey, version: "2026-05-25", body, headers: key ? { "idempotency-key": key } : {} });
  const count = async (w: TestWorkspace, path: string) => {
    const res = await h.api(w, "GET", path);
    return (Array.isArray(res.body) ? res.body : res.body.data).length as number;
  };

  beforeAll(async () => {
    h = await Harness.start({ startJobs: false });
    ws = await h.workspace();
    other = await h.workspace({ name: "Other" });
  }, 30_000);
  afterAll(() => h.close());

  test("the same key and request: the first answer (status and body) again, and nothing done twice", async () => {
    const first = await post(ws, "/connections", { name: "Acme", type: "SFTP" }, "k-1");
    expect(first.status).toBe(200);
    const again = await post(ws, "/connections", { type: "SFTP", name: "Acme" }, "k-1");
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await count(ws, "/connections")).toBe(1);
    // Without a key, the same body is a new request (here: a name clash).
    expect((await post(ws, "/connections", { name: "Acme", type: "SFTP" }, null)).status).toBe(409);
  });

  test("the same key with a different request is a 409 naming the key, and changes nothing", async () => {
    const res = await post(ws, "/connections", { name: "Other name", type: "SFTP" }, "k-1");
    expect(res.status).toBe(409);
    expect(res.body.error).toBe("conflict");
    expect(res.body.message).toContain("Idempotency-Key: 'k-1'");
    const elsewhere = await post(ws, "/schemas", { name: "S", definition: SCHEMA }, "k-1");
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body.message).toContain("POST /connections");
    expect(await count(ws, "/connections")).toBe(1);
    expect(await count(ws, "/schemas")).toBe(0);
  });

  test("keys are per workspace; a malformed key is a 400", async () => {
    const res = await post(other, "/connections", { name: "Other name", type: "SFTP" }, "k-1");
    expect(res.status).toBe(200);
    const bad = await post(ws, "/connections", { name: "B", type: "SFTP" }, "bad key with spaces");
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("Idempotency-Key");
    expect(await count(ws, "/connections")).toBe(1);
  });

  test("a failed request frees its key: a retry with it runs", async () => {
    const bad = await post(ws, "/schemas", { name: "S", definition: { type: "object" } }, "k-2");
    expect(bad.status).toBe(400);
    const good = await post(ws, "/schemas", { name: "S", definition: SCHEMA }, "k-2");
    expect(good.status).toBe(200);
  });

  test("concurrent requests with one key have one effect", async () => {
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => post(ws, "/webhooks", { name: "Hook", url: "https://hooks.example.com/a" }, "k-concurrent")),
    );
    const ok = replies.filter((r) => r.status === 200);
    const busy = replies.filter((r) => r.status === 409);
    expect(ok.length + busy.length).toBe(8);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of busy) expect(r.body.message).toContain("'k-concurrent'");
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
    expect(await count(ws, "/webhooks")).toBe(1);
    // Once answered, a retry replays the webhook as created (its secret shown once, to the same caller).
    const retry = await post(ws, "/webhooks", { name: "Hook", url: "https://hooks.example.com/a" }, "k-concurrent");
    expect(retry.body.id).toBe(ok[0]!.body.id);
    expect(retry.body.secret).toBe(ok[0]!.body.secret);
    // The stored answer is sealed: the secret is not in the database in clear.
    const rows = await h.svc.db.read.select().from(h.svc.db.t.idempotencyKeys);
    expect(JSON.stringify(rows)).not.toContain(ok[0]!.body.secret);
  });

  test("uploads: the same file replays the run; another file with the key is a 409; concurrent uploads make one run", async () => {
    const p = await createPipeline(h, ws);
    const headers = { "idempotency-key": "up-1" };
    const up = (content: string) => uploadFileWith(h, ws, p.pipeline.id, content, headers);
    const first = await up(ITEMS_CSV);
    expect(first.status).toBe(200);
    const again = await up(ITEMS_CSV);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const different = await up(`${ITEMS_CSV}d-4,1,Extra\n`);
    expect(different.status).toBe(409);
    expect(different.body.message).toContain("'up-1'");
    const runs = await h.api(ws, "GET", `/pipeline-runs/pipeline/${p.pipeline.id}`);
    expect(runs.body.data).toHaveLength(1);

    const together = await Promise.all(Array.from({ length: 4 }, () => uploadFileWith(h, ws, p.pipeline.id, ITEMS_CSV, { "idempotency-key": "up-2" })));
    const made = new Set(together.filter((r) => r.status === 200).map((r) => r.body.id));
    expect(made.size).toBe(1);
    expect(together.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect((await h.api(ws, "GET", `/pipeline-runs/pipeline/${p.pipeline.id}`)).body.data).toHaveLength(2);
  });

  test("outbound part uploads take the key", async () => {
    const p = await createPipeline(h, ws, { direction: "outbound" });
    const upload = await h.ok(ws, "POST", "/outbound/uploads", { connectionName: p.connection.name, pipelineName: p.pipeline.name, totalParts: 1 });
    const put = (rows: unknown[]) =>
      h.request("PUT", `/outbound/uploads/${upload.uploadId}/parts/1`, { key: ws.apiKey, version: "2026-05-25", body: rows, headers: { "idempotency-key": "part-1" } });
    const first = await put([{ SKU: "a-1", Qty: 1 }]);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await put([{ SKU: "a-1", Qty: 1 }]);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const different = await put([{ SKU: "b-2", Qty: 2 }]);
    expect(different.status).toBe(409);
  });

  test("after 24 hours a key may be used again; the hourly job deletes old keys", async () => {
    h.clock.advance(24 * 3600 * 1000 + 1);
    const res = await post(ws, "/connections", { name: "Fresh", type: "SFTP" }, "k-1");
    expect(res.status).toBe(200);
    expect(await purgeIdempotencyKeys(h.svc)).toBeGreaterThan(3);
  });
});

async function uploadFileWith(h: Harness, ws: TestWorkspace, pipelineId: string, content: string, headers: Record<string, string>) {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "text/csv" }), "items.csv");
  const res = await h.service.http.handle(
    new Request(`http://localhost/pipelines/${pipelineId}/runs`, { method: "POST", headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25", ...headers }, body: form }),
  );
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}
