import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { recordArrival } from "../src/services/run-path/ingest/inbound";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { spaceKey } from "../src/services/spaces";
import { waitForRun } from "./helpers/runs";
import { DASHBOARD_PATHS } from "../src/http/web";

/**
 * Walks every REST route the app serves, with no key, with a bad key, and
 * with a second workspace's key against the first workspace's resources.
 * A route added later without a fixture below fails this file, so no route
 * escapes the walk.
 */
let h: Harness;
let owner: TestWorkspace;
let intruder: TestWorkspace;
const ids: Record<string, string> = {};

const PUBLIC = new Set(["/healthz", "/livez", "/readyz", "/openapi.json", "/docs", "/docs/assets/:file", "/docs/migrations/2026-05-25", ...DASHBOARD_PATHS, "/assets/:file"]);
// /graphql and /trpc authenticate inside their transports (see graphql/trpc security tests); /storage/o/* links carry their own signature;
// /metrics takes METRICS_TOKEN, not an API key (test/metrics.test.ts).
const OWN_AUTH = new Set(["/graphql", "/trpc/*", "/storage/o/*", "/metrics"]);

/** Which fixture id fills the `:id` of each resource path. */
const RESOURCE_OF: Record<string, string> = {
  connections: "connection",
  clients: "connection",
  schemas: "schema",
  pipelines: "pipeline",
  webhooks: "webhook",
  "pipeline-runs": "run",
  files: "run",
};

/**
 * Routes without a path id that name the owner's resources in their query or
 * body: an intruder gets 404 from them, never the owner's data.
 */
const NAMED_IN_REQUEST: Record<string, () => { query?: string; body?: unknown }> = {
  "GET /files/json": () => ({ query: `?pipelineRunId=${ids.run}` }),
  "GET /pipeline-runs/delta": () => ({ query: `?baseRunId=${ids.run}&compareRunId=${ids.run}` }),
  "POST /files/search": () => ({ body: { pipelineRunIds: [ids.run] } }),
  // Documents: the owner's connection in the query or body; the owner's own call finds the fixtures made in beforeAll.
  "POST /documents/upload-url": () => ({ body: { connectionId: ids.connection, filename: "x.txt", size: 1 } }),
  "POST /documents/upload-complete": () => ({ body: { connectionId: ids.connection, path: "docs/mp.bin", uploadId: ids.docUpload, parts: [{ partNumber: 1, etag: "0".repeat(32) }] } }),
  "POST /documents/upload-abort": () => ({ body: { connectionId: ids.connection, path: "docs/none.bin", uploadId: "0".repeat(32) } }),
  "GET /documents": () => ({ query: `?connectionId=${ids.connection}&path=docs` }),
  "GET /documents/object": () => ({ query: `?connectionId=${ids.connection}&path=docs/a.txt` }),
  "GET /documents/download-url": () => ({ query: `?connectionId=${ids.connection}&path=docs/a.txt` }),
  "POST /documents/folders": () => ({ body: { connectionId: ids.connection, path: "docs/new" } }),
  "POST /documents/move": () => ({ body: { connectionId: ids.connection, from: "docs/m1.txt", to: "docs/m2.txt" } }),
  "POST /documents/rename": () => ({ body: { connectionId: ids.connection, path: "docs/r1.txt", name: "r2.txt" } }),
  "DELETE /documents/object": () => ({ query: `?connectionId=${ids.connection}&path=docs/del.txt` }),
  "DELETE /documents/folder": () => ({ query: `?connectionId=${ids.connection}&path=docs/gone` }),
  "POST /documents/bulk-delete": () => ({ body: { connectionId: ids.connection, paths: ["docs/b1.txt"] } }),
  // The owner's automation-platform subscription, by id (the owner's own call then removes it).
  "DELETE /webhooks/zapier/pipeline-run-events/unsubscribe": () => ({ query: `?id=${ids.subscription}` }),
  "POST /outbound/uploads": () => ({ body: { connectionName: "Owner SFTP", pipelineName: "Owner outbound", totalParts: 1 } }),
};

beforeAll(async () => {
  h = await Harness.start();
  owner = await h.workspace({ name: "Owner" });
  intruder = await h.workspace({ name: "Intruder" });
  const conn = await h.api(owner, "POST", "/connections", { name: "Owner SFTP", sftpPassword: "s3cret" });
  const schema = await h.api(owner, "POST", "/schemas", { name: "Owner schema", definition: { type: "object", properties: { a: { type: "string" } } } });
  const webhook = await h.api(owner, "POST", "/webhooks", { name: "Owner hook", url: "https://hooks.example.com/a" });
  const pipeline = await h.api(owner, "POST", "/pipelines", {
    name: "Owner pipeline",
    clientId: conn.body.id,
    schemaId: schema.body.id,
    webhookIds: [webhook.body.id],
  });
  for (const r of [conn, schema, webhook, pipeline]) expect(r.status).toBe(200);
  ids.connection = conn.body.id;
  ids.schema = schema.body.id;
  ids.webhook = webhook.body.id;
  ids.pipeline = pipeline.body.id;
  // Documents: objects of the owner's connection, and a multipart upload, for the routes that name them.
  for (const p of ["docs/a.txt", "docs/m1.txt", "docs/r1.txt", "docs/del.txt", "docs/gone/x.txt", "docs/b1.txt"]) {
    await h.svc.storage.put(spaceKey(owner.workspaceId, ids.connection!, p), "Owner document");
  }
  ids.docUpload = (await h.svc.storage.createMultipart(spaceKey(owner.workspaceId, ids.connection!, "docs/mp.bin"))).uploadId;
  const outbound = await h.api(owner, "POST", "/pipelines", { name: "Owner outbound", clientId: conn.body.id, schemaId: schema.body.id, direction: "outbound" });
  expect(outbound.status).toBe(200);
  const upload = await h.api(owner, "POST", "/outbound/uploads", { connectionName: "Owner SFTP", pipelineName: "Owner outbound", totalParts: 1 });
  expect(upload.status).toBe(200);
  ids.upload = upload.body.uploadId;
  // GET /connections/:id/arrivals: the owner's connection has one, which an intruder must not see.
  await recordArrival(h.svc, { workspaceId: owner.workspaceId, connectionId: ids.connection!, transport: "email", filename: "Owner file.csv", outcome: "ignored", reason: "Owner reason" });
  const preferences = await h.api(owner, "PUT", `/notifications/preferences/${ids.connection}`, {
    preferences: [{ eventType: "PIPELINE_RUN_SUCCEEDED", channel: "EMAIL", isEnabled: true, recipients: ["owner@owner.test"] }],
  });
  expect(preferences.status).toBe(200);
  const form = new FormData();
  form.append("file", new Blob(["a\nOwner row\n"], { type: "text/csv" }), "owner.csv");
  const run = await h.service.http.handle(
    new Request(`http://localhost/pipelines/${ids.pipeline}/runs`, { method: "POST", headers: { "x-api-key": owner.apiKey }, body: form }),
  );
  expect(run.status).toBe(200);
  ids.run = ((await run.json()) as { id: string }).id;
  await waitForRun(h, owner, ids.run, ["completed"]);
  // Webhooks: a subscription, and a delivery of the run's event to the owner's hook (hooks.example.com does not resolve here: a recorded failure).
  const subscription = await h.api(owner, "POST", "/webhooks/zapier/pipeline-run-events/subscribe", { targetUrl: "https://hooks.example.com/owner-zap" });
  expect(subscription.status).toBe(200);
  ids.subscription = subscription.body.id;
  for (let i = 0; i < 400 && !ids.delivery; i++) {
    ids.delivery = (await h.api(owner, "GET", `/webhooks/deliveries?webhookId=${ids.webhook}`)).body.data[0]?.id;
    if (!ids.delivery) await Bun.sleep(25);
  }
  expect(ids.delivery).toBeDefined();
});
afterAll(() => h.close());

function apiRoutes() {
  return h.service.http.routes
    .filter((r) => !PUBLIC.has(r.path) && !OWN_AUTH.has(r.path))
    .map((r) => ({ method: r.method, path: r.path }));
}

function fill(path: string): string {
  // Outbound uploads: the owner's session and its part 1.
  path = path.replace(":uploadId", ids.upload!).replace(":partNumber", "1");
  return path.replace(/:(\w+)/g, (_, param: string) => {
    const resource = path.startsWith("/webhooks/deliveries/") ? "delivery" : RESOURCE_OF[path.split("/")[1]!];
    const id = param === "pipelineId" ? ids.pipeline : param === "clientId" ? ids.connection : resource && ids[resource];
    if (!id || (param !== "id" && param !== "pipelineId" && param !== "clientId")) throw new Error(`no security fixture for ${path}: add one to test/security.test.ts`);
    return id;
  });
}

const BODY = { name: "hijacked" };

describe("every REST route", () => {
  test("the walk covers the resource routes", () => {
    const paths = new Set(apiRoutes().map((r) => r.path));
    for (const p of ["/connections", "/connections/:id", "/connections/:id/arrivals", "/clients/:id/test-connection", "/schemas/:id", "/pipelines/:id", "/webhooks/:id"]) {
      expect(paths.has(p)).toBe(true);
    }
  });

  test("refuses a request without a key: 401 with the standard error body", async () => {
    for (const r of apiRoutes()) {
      const res = await h.request(r.method, fill(r.path), { body: r.method === "GET" || r.method === "DELETE" ? undefined : BODY });
      expect({ route: `${r.method} ${r.path}`, status: res.status }).toEqual({ route: `${r.method} ${r.path}`, status: 401 });
      expect(res.body).toEqual({ message: "x-api-key: header is required", statusCode: 401, error: "unauthorized", requestId: expect.any(String) });
    }
  });

  test("refuses unknown, malformed and forged keys", async () => {
    const forged = `${owner.apiKey.slice(0, -4)}AAAA`;
    for (const key of ["nope", "fps_short_key", forged, owner.apiKey.toLowerCase()]) {
      const res = await h.request("GET", "/connections", { key });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe("unauthorized");
    }
  });

  test("answers 404 for another workspace's ids, whatever the method", async () => {
    for (const r of apiRoutes().filter((r) => r.path.includes(":id") || r.path.includes(":pipelineId") || r.path.includes(":clientId"))) {
      const res = await h.request(r.method, fill(r.path), {
        key: intruder.apiKey,
        version: "2026-05-25",
        body: r.method === "GET" || r.method === "DELETE" ? undefined : BODY,
      });
      expect({ route: `${r.method} ${r.path}`, status: res.status }).toEqual({ route: `${r.method} ${r.path}`, status: 404 });
      expect(res.body.error).toBe("not_found");
      expect(JSON.stringify(res.body)).not.toContain("Owner");
    }
  });

  test("answers 404 for another workspace's outbound uploads, whatever the method", async () => {
    const routes = apiRoutes().filter((r) => r.path.includes(":uploadId"));
    expect(routes.length).toBe(3);
    for (const r of routes) {
      const res = await h.request(r.method, fill(r.path), { key: intruder.apiKey, version: "2026-05-25", body: r.method === "GET" ? undefined : BODY });
      expect({ route: `${r.method} ${r.path}`, status: res.status }).toEqual({ route: `${r.method} ${r.path}`, status: 404 });
      expect(res.body.error).toBe("not_found");
      expect(JSON.stringify(res.body)).not.toContain("Owner");
    }
  });

  test("routes that name the owner's runs in the query or body answer 404 to an intruder", async () => {
    for (const [route, request] of Object.entries(NAMED_IN_REQUEST)) {
      const [method, path] = route.split(" ") as [string, string];
      const { query = "", body } = request();
      const res = await h.request(method, `${path}${query}`, { key: intruder.apiKey, version: "2026-05-25", body });
      expect({ route, status: res.status }).toEqual({ route, status: 404 });
      expect(JSON.stringify(res.body)).not.toContain("Owner");
      const own = await h.request(method, `${path}${query}`, { key: owner.apiKey, version: "2026-05-25", body });
      expect({ route, status: own.status }).not.toEqual({ route, status: 404 });
    }
  });

  test("lists show none of another workspace's resources", async () => {
    for (const r of apiRoutes().filter((r) => r.method === "GET" && !r.path.includes(":") && !NAMED_IN_REQUEST[`GET ${r.path}`])) {
      const res = await h.request("GET", r.path, { key: intruder.apiKey, version: "2026-05-25" });
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain(owner.workspaceId);
      expect(JSON.stringify(res.body)).not.toContain("Owner");
    }
  });

  test("the owner's resources are untouched after the walk", async () => {
    for (const [resource, path] of [
      ["connection", "/connections"],
      ["schema", "/schemas"],
      ["pipeline", "/pipelines"],
      ["webhook", "/webhooks"],
    ] as const) {
      const res = await h.api(owner, "GET", `${path}/${ids[resource]}`);
      expect(res.status).toBe(200);
      expect(res.body.name).not.toBe("hijacked");
    }
    const upload = await h.api(owner, "GET", `/outbound/uploads/${ids.upload}`);
    expect(upload.body).toMatchObject({ status: "initiated", partsReceived: 0 });
    const pipeline = await h.api(owner, "GET", `/pipelines/${ids.pipeline}`);
    expect(pipeline.body.webhooks.map((w: { id: string }) => w.id)).toEqual([ids.webhook]);
    const preferences = await h.api(owner, "GET", `/notifications/preferences/${ids.connection}`);
    expect(preferences.body.map((p: { recipients: string[] }) => p.recipients)).toEqual([["owner@owner.test"]]);
  });
});

describe("responses never carry secrets they should not", () => {
  test("no 2026-05-25 response returns a stored credential or a webhook secret", async () => {
    for (const r of apiRoutes().filter((r) => r.method === "GET")) {
      const res = await h.request("GET", fill(r.path), { key: owner.apiKey, version: "2026-05-25" });
      const text = JSON.stringify(res.body);
      expect(text).not.toContain("s3cret");
      expect(text).not.toContain("whsec_");
    }
  });
});
