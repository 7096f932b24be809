import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createService, type Service } from "../src/app";
import { parseConfig } from "../src/config";
import { currentRequestId, runInRequest } from "../src/domain/request-context";
import { createLogger } from "../src/logger";
import { createWorkspace } from "../src/services/workspaces/create-workspace";
import { freshDatabase, type TestDatabase } from "./helpers/database";
import { ITEM_MAPPINGS, ITEMS_CSV } from "./helpers/runs";

setDefaultTimeout(60_000);

/**
 * X-Request-Id: the client's own when well formed (1-128 visible ASCII
 * characters), else a new one; on every reply, in the access line and every
 * line logged while serving, in every error body (REST `requestId`, GraphQL
 * `extensions.requestId`, tRPC `error.data.requestId`), and in the metadata
 * of a run a request started. The service's own logger (src/logger.ts) at
 * debug, its lines captured.
 */
let service: Service;
let database: TestDatabase;
let dataDir: string;
let apiKey: string;
const lines: Record<string, any>[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "fps-reqid-"));
  database = await freshDatabase(dataDir);
  const log = createLogger("debug", { write: (line: string) => void lines.push(JSON.parse(line)) });
  service = await createService({ config: parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: "debug", PUBLIC_URL: "http://localhost:3000" }), db: database.db, log });
  ({ key: { apiKey } } = await createWorkspace(service.svc, { name: "Acme", email: "ops@acme-logistics.com" }));
});
afterAll(async () => {
  await service.close();
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

function call(path: string, init: { method?: string; headers?: Record<string, string>; body?: BodyInit; key?: boolean } = {}) {
  const headers: Record<string, string> = { "service-version": "2026-05-25", ...init.headers };
  if (init.key !== false) headers["x-api-key"] = apiKey;
  return service.http.handle(new Request(`http://localhost${path}`, { method: init.method ?? "GET", headers, body: init.body }));
}

async function makePipeline(name: string): Promise<{ id: string }> {
  const post = async (path: string, body: unknown) => (await call(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
  const conn = await post("/connections", { name, type: "SFTP", useHostedSFTP: true });
  const schema = await post("/schemas", { name: `${name} items`, definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" }, name: { type: "string" } } } });
  return post("/pipelines", { name: `${name} in`, clientId: conn.id, schemaId: schema.id, mappings: ITEM_MAPPINGS });
}

describe("the id on the reply", () => {
  test("the client's own when well formed; a new one when absent or malformed", async () => {
    const own = `trace-${"x".repeat(100)}~!#$%&'*+-.^_|`;
    expect((await call("/healthz", { headers: { "x-request-id": own } })).headers.get("x-request-id")).toBe(own);
    const edge = "a".repeat(128);
    expect((await call("/connections", { headers: { "x-request-id": edge } })).headers.get("x-request-id")).toBe(edge);
    const made = new Set<string>();
    const malformed = [null, "", "a".repeat(129), "has space", "naïve", "del\u007f"];
    for (const bad of malformed) {
      const res = await call("/connections", { headers: bad === null ? {} : { "x-request-id": bad } });
      const id = res.headers.get("x-request-id")!;
      expect(id).toMatch(/^req_[0-9a-f]{24,}$/);
      made.add(id);
    }
    expect(made.size).toBe(malformed.length);
  });

  test("on every surface and outcome: REST, 404, GraphQL, tRPC, /metrics", async () => {
    for (const [path, init] of [
      ["/pipelines", {}],
      ["/no/such/route", {}],
      ["/graphql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query: "{ pipelines { total } }" }) }],
      ["/trpc/pipelines.list", {}],
      ["/metrics", {}],
    ] as const) {
      const res = await call(path, { ...init, headers: { ...("headers" in init ? init.headers : {}), "x-request-id": `id-${path}` } });
      expect(res.headers.get("x-request-id"), path).toBe(`id-${path}`);
    }
  });
});

describe("the id in error bodies", () => {
  test("REST: refused key, unknown route, bad input, unknown pipeline", async () => {
    const cases = [
      await call("/pipelines", { key: false, headers: { "x-request-id": "r-401" } }),
      await call("/nowhere", { headers: { "x-request-id": "r-404a" } }),
      await call("/schemas", { method: "POST", headers: { "x-request-id": "r-400", "content-type": "application/json" }, body: "{}" }),
      await call("/pipelines/pipe_missing", { headers: { "x-request-id": "r-404b" } }),
    ];
    expect(cases.map((r) => r.status)).toEqual([401, 404, 400, 404]);
    for (const r of cases) expect((await r.json()).requestId).toBe(r.headers.get("x-request-id")!);
  });

  test("GraphQL: a refused key, a service error and an invalid document carry extensions.requestId", async () => {
    const gql = (query: string, key = true, id = "g") =>
      call("/graphql", { key, method: "POST", headers: { "content-type": "application/json", "x-request-id": id }, body: JSON.stringify({ query }) });
    const refused = await (await gql("{ pipelines { total } }", false, "g-401")).json();
    expect(refused.errors[0].extensions).toMatchObject({ error: "unauthorized", requestId: "g-401" });
    const missing = await (await gql('{ pipeline(id: "pipe_missing") { id } }', true, "g-404")).json();
    expect(missing.errors[0].extensions).toMatchObject({ error: "not_found", requestId: "g-404" });
    const invalid = await (await gql("{ noSuchField }", true, "g-400")).json();
    expect(invalid.errors[0].extensions).toMatchObject({ error: "invalid_input", requestId: "g-400" });
  });

  test("tRPC: a refused key, a service error and bad input carry error.data.requestId", async () => {
    const refused = await (await call("/trpc/pipelines.list", { key: false, headers: { "x-request-id": "t-401" } })).json();
    expect(refused.error.data).toMatchObject({ error: "unauthorized", requestId: "t-401" });
    const missing = await (await call(`/trpc/pipelines.get?input=${encodeURIComponent(JSON.stringify({ id: "pipe_missing" }))}`, { headers: { "x-request-id": "t-404" } })).json();
    expect(missing.error.data).toMatchObject({ error: "not_found", requestId: "t-404" });
    const bad = await (await call(`/trpc/pipelines.get?input=${encodeURIComponent(JSON.stringify({ id: "" }))}`, { headers: { "x-request-id": "t-400" } })).json();
    expect(bad.error.data).toMatchObject({ error: "invalid_input", requestId: "t-400" });
  });
});

describe("the id in logs and runs", () => {
  test("the access line and every line logged while serving carry it; a run stores the id that started it; its job's lines do not", async () => {
    const pipeline = await makePipeline("Partner");
    lines.length = 0;
    const form = new FormData();
    form.append("file", new Blob([ITEMS_CSV], { type: "text/csv" }), "items.csv");
    const res = await call(`/pipelines/${pipeline.id}/runs`, { method: "POST", headers: { "x-request-id": "upload-req-1" }, body: form });
    expect(res.status).toBe(200);
    const run = await res.json();
    expect(run.metadata.requestId).toBe("upload-req-1");
    // Wait for the run's job to end: its lines are logged outside any request.
    for (let i = 0; i < 400; i++) {
      const r = await (await call(`/pipeline-runs/${run.id}`, { headers: { "x-request-id": `poll-${i}` } })).json();
      if (r.status === "completed") break;
      await Bun.sleep(25);
    }
    await Bun.sleep(50);
    const access = lines.filter((l) => l.msg === "request" && l.route === "/pipelines/:id/runs");
    expect(access).toHaveLength(1);
    expect(access[0]!.requestId).toBe("upload-req-1");
    expect(currentRequestId()).toBeUndefined();
  });

  test("a line logged while serving (an unexpected failure) carries the id, as does the 500's body", async () => {
    const storage = service.svc.storage;
    const original = storage.putArriving;
    storage.putArriving = async () => {
      throw new Error("disk on fire");
    };
    lines.length = 0;
    try {
      const form = new FormData();
      form.append("file", new Blob([ITEMS_CSV], { type: "text/csv" }), "items.csv");
      const pipeline = await makePipeline("Other partner");
      const res = await call(`/pipelines/${pipeline.id}/runs`, { method: "POST", headers: { "x-request-id": "boom-1" }, body: form });
      expect(res.status).toBe(500);
      expect((await res.json()).requestId).toBe("boom-1");
    } finally {
      storage.putArriving = original;
    }
    const logged = lines.find((l) => l.msg === "unhandled error");
    expect(logged?.err?.message).toBe("disk on fire");
    expect(logged?.requestId).toBe("boom-1");
  });

  test("a job set off during a request logs without the request's id", async () => {
    lines.length = 0;
    // Enqueued inside a request scope, as an upload does: the queue wakes in that scope.
    await runInRequest({ requestId: "enqueuer-1" }, () => service.svc.queue.add({ name: "run.process", payload: { runId: "run_gone", attempt: 1 } }));
    for (let i = 0; i < 200 && !lines.some((l) => l.msg === "run.process: no such run"); i++) await Bun.sleep(25);
    const line = lines.find((l) => l.msg === "run.process: no such run");
    expect(line?.runId).toBe("run_gone");
    expect(line?.requestId).toBeUndefined();
  });
});
