import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { recordArrival } from "../src/services/run-path/ingest/inbound";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { spaceKey } from "../src/services/spaces";
import { DASHBOARD_PATHS } from "../src/http/web";

/**
 * The OpenAPI 3.1 document at /openapi.json is built from the REST routes'
 * own declarations: every route is in it, every reference resolves, bodies
 * name the input shapes, and real responses fit the declared shapes. /docs
 * serves Swagger UI from the local swagger-ui-dist package.
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is walked generically
type Json = any;

let h: Harness;
let ws: TestWorkspace;
let doc: Json;

const NOT_REST = (path: string) =>
  DASHBOARD_PATHS.includes(path) ||
  path === "/assets/:file" ||
  path === "/graphql" ||
  path.startsWith("/trpc") ||
  path.startsWith("/docs") ||
  path === "/openapi.json" ||
  path === "/healthz" ||
  path === "/livez" ||
  path === "/readyz" ||
  path === "/metrics" ||
  path.startsWith("/storage/o/");
const toOpenApiPath = (path: string) => path.replace(/:([^/]+)/g, "{$1}");

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  const r = await h.request("GET", "/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
});

afterAll(async () => {
  await h.close();
});

function restRoutes(): { method: string; path: string }[] {
  return h.service.http.routes.map((r) => ({ method: r.method, path: r.path })).filter((r) => !NOT_REST(r.path));
}

function operation(method: string, path: string): Json {
  return doc.paths?.[toOpenApiPath(path)]?.[method.toLowerCase()];
}

describe("/openapi.json", () => {
  test("is served without a key as an OpenAPI 3.1 document that declares the x-api-key scheme", async () => {
    const r = await h.request("GET", "/openapi.json");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/json");
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.title).toBe("File Pipeline Service");
    expect(typeof doc.info.version).toBe("string");
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: "apiKey", in: "header", name: "x-api-key" });
    expect(doc.security).toEqual([{ apiKey: [] }]);
  });

  test("every REST route of the app has an operation with a 200, its 4xx errors and a default response", () => {
    const routes = restRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(27);
    const missing = routes.filter((r) => {
      const op = operation(r.method, r.path);
      return !op?.responses?.["200"] || !op.responses.default || !op.responses["400"] || !op.responses["401"] || !op.responses["429"];
    });
    expect(missing.map((r) => `${r.method} ${r.path}`), "routes without a documented operation").toEqual([]);
  });

  test("the document describes no operation the app does not serve, and operation ids are unique", () => {
    const served = new Set(restRoutes().map((r) => `${r.method.toLowerCase()} ${toOpenApiPath(r.path)}`));
    const documented = Object.entries(doc.paths ?? {}).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m} ${path}`));
    expect(documented.length).toBe(served.size);
    for (const d of documented) expect(served.has(d), `${d} is not a route`).toBe(true);
    const opIds = Object.values(doc.paths ?? {}).flatMap((ops) => Object.values(ops as Record<string, Json>).map((o) => o.operationId));
    expect(new Set(opIds).size).toBe(opIds.length);
  });

  test("each operation declares its path parameters and the Service-Version header", () => {
    for (const r of restRoutes()) {
      const op = operation(r.method, r.path);
      const params = (op?.parameters ?? []) as Json[];
      for (const [, name] of r.path.matchAll(/:([^/]+)/g)) {
        expect(params, `${r.method} ${r.path}`).toContainEqual({ name, in: "path", required: true, schema: { type: "string" } });
      }
      expect(params).toContainEqual({ $ref: "#/components/parameters/ServiceVersion" });
    }
    expect(doc.components.parameters.ServiceVersion).toMatchObject({ name: "Service-Version", in: "header", schema: { enum: ["2024-09-01", "2026-05-25"] } });
  });

  test("every $ref resolves inside the document", () => {
    const refs: string[] = [];
    const walk = (v: Json) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === "object") {
        if (typeof v.$ref === "string") refs.push(v.$ref);
        Object.values(v).forEach(walk);
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(50);
    const resolve = (ref: string) =>
      ref
        .slice(2)
        .split("/")
        .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
        .reduce<Json>((node, key) => (node == null ? undefined : node[key]), doc);
    const dangling = [...new Set(refs)].filter((ref) => !ref.startsWith("#/") || resolve(ref) === undefined);
    expect(dangling).toEqual([]);
    expect(refs.filter((r) => r.startsWith("#/components/schemas/")).length).toBeGreaterThan(0);
  });

  test("request bodies of POST and PATCH routes reference the named input shapes, written out as request bodies", () => {
    const expected: Record<string, string> = {
      "POST /connections": "CreateConnectionInput",
      "PATCH /connections/:id": "UpdateConnectionInput",
      "POST /clients": "CreateConnectionInput",
      "PATCH /clients/:id": "UpdateConnectionInput",
      "POST /schemas": "CreateSchemaInput",
      "PATCH /schemas/:id": "UpdateSchemaInput",
      "POST /pipelines": "CreatePipelineInput",
      "PATCH /pipelines/:id": "UpdatePipelineInput",
      "POST /webhooks": "CreateWebhookInput",
      "PATCH /webhooks/:id": "UpdateWebhookInput",
      "POST /webhooks/zapier/pipeline-run-events/subscribe": "SubscribeInput",
      "PATCH /pipeline-runs/:id/status": "AcknowledgeRunInput",
      "POST /pipeline-runs/:id/reprocess": "ReprocessRunInput",
      "POST /files/search": "SearchFilesInput",
      "POST /documents/upload-url": "UploadUrlInput",
      "POST /documents/upload-complete": "CompleteUploadInput",
      "POST /documents/upload-abort": "AbortUploadInput",
      "POST /documents/folders": "CreateFolderInput",
      "POST /documents/move": "MoveDocumentInput",
      "POST /documents/rename": "RenameDocumentInput",
      "POST /documents/bulk-delete": "BulkDeleteInput",
      "POST /outbound/uploads": "CreateOutboundUploadInput",
      "POST /outbound/uploads/:uploadId/complete": "CompleteOutboundUploadInput",
    };
    const multipart: Record<string, string> = {
      "POST /pipelines/:id/runs": "UploadRunForm",
      "POST /pipelines/:id/preview": "PreviewForm",
      "POST /schemas/infer": "InferSchemaForm",
    };
    for (const r of restRoutes().filter((r) => r.method === "POST" || r.method === "PATCH")) {
      const key = `${r.method} ${r.path}`;
      const body = operation(r.method, r.path)?.requestBody;
      if (multipart[key]) {
        expect(body?.content?.["multipart/form-data"]?.schema, key).toEqual({ $ref: `#/components/schemas/${multipart[key]}` });
        continue;
      }
      if (r.path.endsWith("/test-connection") || r.path.endsWith("/retry") || r.path.endsWith("/rotate-secret") || r.path.endsWith("/redeliver")) {
        expect(body, `${key} takes no body`).toBeUndefined();
        continue;
      }
      expect(expected[key], `${key} has no expected input shape in this test`).toBeDefined();
      expect(body, key).toEqual({ $ref: `#/components/requestBodies/${expected[key]}` });
      const named = doc.components.requestBodies[expected[key]!];
      // The reprocess body only names a version; without it the current one is used.
      expect(named?.required, key).toBe(key !== "POST /pipeline-runs/:id/reprocess");
      expect(named?.content?.["application/json"]?.schema?.type, key).toBe("object");
    }
  });

  test("input shapes are described as a client sends them: defaults are optional, outputs are not mixed in", () => {
    const s = doc.components.schemas;
    const input = (id: string) => doc.components.requestBodies[id].content["application/json"].schema;
    expect([...input("CreatePipelineInput").required].sort()).toEqual(["clientId", "name", "schemaId"]);
    expect(input("CreatePipelineInput").properties.direction.default).toBe("inbound");
    // A named shape that reads differently as input (it has defaults) is written out in its input form.
    expect(input("CreatePipelineInput").properties.mappings.required).toBeUndefined();
    expect(input("CreatePipelineInput").properties.mappings.properties.fieldMappings.default).toEqual([]);
    expect(s.PipelineMappings.required).toEqual(expect.arrayContaining(["fieldMappings", "options", "validations"]));
    expect(input("SearchFilesInput").required).toEqual(["pipelineRunIds"]);
    expect(input("CreateConnectionInput").required).toEqual(["name"]);
    expect(input("CreateConnectionInput").properties.sftpPassword).toBeDefined();
    expect(input("CreateConnectionInput").properties.credentialsSet).toBeUndefined();
    expect(s.Connection.properties.credentialsSet).toBeDefined();
    expect(s.Connection.properties.sftpPassword?.deprecated).toBe(true);
    expect(s.Error.required).toEqual(["message", "statusCode", "error"]);
  });

  test("a shared schema has no optional member with a default: tools read a default there as always present", () => {
    // openapi-typescript (by default) makes a member with a `default` required everywhere but in parameters and
    // request bodies; so every optional member with a default must live in a request body or a parameter.
    const offenders: string[] = [];
    const walk = (v: Json, at: string) => {
      if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${at}/${i}`));
      if (!v || typeof v !== "object") return;
      for (const [name, prop] of Object.entries((v.properties ?? {}) as Record<string, Json>)) {
        if (prop && typeof prop === "object" && "default" in prop && !(v.required ?? []).includes(name)) offenders.push(`${at}/properties/${name}`);
      }
      for (const [k, x] of Object.entries(v)) walk(x, `${at}/${k}`);
    };
    walk(doc.components.schemas, "#/components/schemas");
    walk(doc.components.responses, "#/components/responses");
    for (const [path, ops] of Object.entries(doc.paths)) for (const [m, op] of Object.entries(ops as Json)) walk((op as Json).responses, `${m} ${path}`);
    expect(offenders).toEqual([]);
    expect(Object.keys(doc.components.requestBodies).length).toBeGreaterThanOrEqual(20);
  });

  test("errors are declared per status with the one error body: shared ones by reference, a route's own with their cause", () => {
    const ops = Object.entries(doc.paths).flatMap(([path, o]) => Object.entries(o as Json).map(([m, op]) => ({ key: `${m.toUpperCase()} ${path}`, op: op as Json })));
    for (const { key, op } of ops) {
      expect(op.responses["401"], key).toEqual({ $ref: "#/components/responses/Unauthorized" });
      expect(op.responses["410"], key).toEqual({ $ref: "#/components/responses/Sunset" });
      expect(op.responses["429"], key).toEqual({ $ref: "#/components/responses/RateLimited" });
      expect(op.responses.default, key).toEqual({ $ref: "#/components/responses/Unexpected" });
      for (const [status, r] of Object.entries(op.responses as Record<string, Json>)) {
        if (status === "200" || r.$ref) continue;
        expect(r.content, `${key} ${status}`).toEqual({ "application/json": { schema: { $ref: "#/components/schemas/Error" } } });
      }
      expect(op.responses["400"].description, key).toContain("Service-Version");
      if (/\{\w*id\}/i.test(key)) expect(op.responses["404"]?.description, key).toMatch(/in the path names nothing/);
      expect(Boolean(op.responses["413"]), `${key} 413`).toBe(Boolean(op.requestBody) || key.startsWith("DELETE /webhooks/zapier"));
    }
    const responses = (method: string, path: string) => operation(method, path).responses;
    expect(Object.keys(responses("DELETE", "/connections/:id"))).toEqual(["200", "400", "401", "404", "409", "410", "429", "default"]);
    expect(responses("POST", "/pipelines")["404"].description).toContain("`clientId`");
    expect(responses("POST", "/pipelines")["400"].description).toContain("feature_not_enabled");
    expect(responses("POST", "/documents/move")["403"].description).toContain("admin key");
    expect(responses("POST", "/pipelines/:id/runs")["413"].description).toContain("MAX_UPLOAD_BYTES");
    expect(responses("PUT", "/outbound/uploads/:uploadId/parts/:partNumber")["413"].description).toContain("OUTBOUND_MAX_PART_BYTES");
    expect(responses("GET", "/pipeline-runs")["404"]).toBeUndefined();
    for (const name of ["Unauthorized", "Sunset", "RateLimited", "Unexpected"]) {
      expect(doc.components.responses[name].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
    }
  });

  test("list responses are shaped as the routes answer: bare arrays or {data, pagination}", () => {
    const schemaOf = (method: string, path: string) => operation(method, path)?.responses?.["200"]?.content?.["application/json"]?.schema;
    expect(schemaOf("GET", "/connections")).toEqual({ type: "array", items: { $ref: "#/components/schemas/Connection" } });
    expect(schemaOf("GET", "/pipelines")).toEqual({ type: "array", items: { $ref: "#/components/schemas/Pipeline" } });
    expect(schemaOf("GET", "/schemas")?.properties?.pagination).toEqual({ $ref: "#/components/schemas/Pagination" });
    expect(schemaOf("GET", "/webhooks")?.properties?.data).toEqual({ type: "array", items: { $ref: "#/components/schemas/Webhook" } });
    const queryNames = (method: string, path: string) =>
      ((operation(method, path)?.parameters ?? []) as Json[]).filter((p) => p.in === "query").map((p) => p.name);
    expect(queryNames("GET", "/pipelines")).toEqual(expect.arrayContaining(["clientId", "connectionName", "clientName", "direction", "isActive"]));
    expect(queryNames("GET", "/connections")).toEqual(expect.arrayContaining(["type", "name"]));
    // A named query shape lists its members too.
    expect(queryNames("GET", "/documents/object")).toEqual(["connectionId", "path"]);
    expect(queryNames("DELETE", "/documents/folder")).toEqual(["connectionId", "path", "force"]);
    expect(queryNames("DELETE", "/webhooks/zapier/pipeline-run-events/unsubscribe")).toEqual(expect.arrayContaining(["id", "targetUrl"]));
    // Every list answers page and limit (DESIGN.md: page from 1, limit default 20, max 100).
    for (const path of ["/connections", "/clients", "/schemas", "/pipelines", "/webhooks"]) {
      expect(queryNames("GET", path), `GET ${path} documents page and limit`).toEqual(expect.arrayContaining(["page", "limit"]));
    }
    expect((operation("GET", "/pipelines")?.parameters as Json[]).find((p) => p.name === "clientName")?.deprecated).toBe(true);
    for (const r of restRoutes().filter((r) => r.path.startsWith("/clients"))) expect(operation(r.method, r.path)?.deprecated, r.path).toBe(true);
  });

  test("real responses fit the shapes the document declares for them", async () => {
    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    ajv.addSchema({ $id: "https://fps.test/openapi.json", components: doc.components });
    const check = (method: string, path: string, status: string, body: unknown) => {
      let response = operation(method, path)?.responses?.[status];
      if (response?.$ref) response = doc.components.responses[response.$ref.split("/").pop()];
      const schema = response?.content?.["application/json"]?.schema;
      expect(schema, `${method} ${path} ${status}`).toBeDefined();
      const validate = ajv.compile({ $id: `https://fps.test/check/${method}${path}/${status}`, ...rewrite(schema) });
      expect(validate(body), `${method} ${path}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    };
    const rewrite = (v: Json): Json =>
      Array.isArray(v)
        ? v.map(rewrite)
        : v && typeof v === "object"
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === "$ref" ? `https://fps.test/openapi.json${x}` : rewrite(x)]))
          : v;

    const conn = await h.api(ws, "POST", "/connections", { name: "Documented", sftpPassword: "pw" });
    check("POST", "/connections", "200", conn.body);
    check("GET", "/connections", "200", (await h.api(ws, "GET", "/connections")).body);
    check("POST", "/connections/:id/test-connection", "200", (await h.api(ws, "POST", `/connections/${conn.body.id}/test-connection`)).body);
    const schema = await h.api(ws, "POST", "/schemas", { name: "S", description: "d", definition: { type: "object", properties: {} } });
    check("POST", "/schemas", "200", schema.body);
    check("GET", "/schemas", "200", (await h.api(ws, "GET", "/schemas")).body);
    const hook = await h.api(ws, "POST", "/webhooks", { name: "W", url: "https://hooks.example.com" });
    check("POST", "/webhooks", "200", hook.body);
    check("POST", "/webhooks/:id/rotate-secret", "200", (await h.api(ws, "POST", `/webhooks/${hook.body.id}/rotate-secret`)).body);
    const subscription = await h.api(ws, "POST", "/webhooks/zapier/pipeline-run-events/subscribe", { targetUrl: "https://hooks.example.com/zap" });
    check("POST", "/webhooks/zapier/pipeline-run-events/subscribe", "200", subscription.body);
    const unsubscribed = await h.api(ws, "DELETE", `/webhooks/zapier/pipeline-run-events/unsubscribe?id=${subscription.body.id}`);
    check("DELETE", "/webhooks/zapier/pipeline-run-events/unsubscribe", "200", unsubscribed.body);
    check("GET", "/webhooks/deliveries", "200", (await h.api(ws, "GET", "/webhooks/deliveries")).body);
    const pipe = await h.api(ws, "POST", "/pipelines", {
      name: "P",
      clientId: conn.body.id,
      schemaId: schema.body.id,
      webhookIds: [hook.body.id],
      mappings: { fieldMappings: [{ source: "a", target: "b", transform: "trim" }] },
    });
    check("GET", "/pipelines/:id", "200", (await h.api(ws, "GET", `/pipelines/${pipe.body.id}`)).body);
    check("DELETE", "/pipelines/:id", "200", (await h.api(ws, "DELETE", `/pipelines/${pipe.body.id}`)).body);
    // Documents: tickets (both modes), listing, metadata, link, folder, move, rename, deletes.
    const docs = (path: string) => `/documents${path}${path.includes("?") ? "&" : "?"}connectionId=${conn.body.id}`;
    const single = await h.api(ws, "POST", "/documents/upload-url", { connectionId: conn.body.id, path: "d", filename: "a.txt", size: 3 });
    check("POST", "/documents/upload-url", "200", single.body);
    const multi = await h.api(ws, "POST", "/documents/upload-url", { connectionId: conn.body.id, path: "d", filename: "big.bin", size: 100 * 1024 ** 2 });
    expect(multi.body).toMatchObject({ mode: "multipart", partSize: 8 * 1024 ** 2 }); // the same declared shape, checked once above
    check("POST", "/documents/upload-abort", "200", (await h.api(ws, "POST", "/documents/upload-abort", { connectionId: conn.body.id, path: multi.body.path, uploadId: multi.body.uploadId })).body);
    await h.svc.storage.put(spaceKey(ws.workspaceId, conn.body.id, "d/a.txt"), "abc");
    check("GET", "/documents", "200", (await h.api(ws, "GET", docs("?path=d"))).body);
    check("GET", "/documents/object", "200", (await h.api(ws, "GET", docs("/object?path=d/a.txt"))).body);
    check("GET", "/documents/download-url", "200", (await h.api(ws, "GET", docs("/download-url?path=d/a.txt"))).body);
    check("POST", "/documents/folders", "200", (await h.api(ws, "POST", "/documents/folders", { connectionId: conn.body.id, path: "d/sub" })).body);
    check("POST", "/documents/move", "200", (await h.api(ws, "POST", "/documents/move", { connectionId: conn.body.id, from: "d/a.txt", to: "d/b.txt" })).body);
    check("POST", "/documents/rename", "200", (await h.api(ws, "POST", "/documents/rename", { connectionId: conn.body.id, path: "d/b.txt", name: "c.txt" })).body);
    check("POST", "/documents/bulk-delete", "200", (await h.api(ws, "POST", "/documents/bulk-delete", { connectionId: conn.body.id, paths: ["d/sub", "d/none"] })).body);
    check("DELETE", "/documents/object", "200", (await h.api(ws, "DELETE", docs("/object?path=d/c.txt"))).body);
    await h.svc.storage.put(spaceKey(ws.workspaceId, conn.body.id, "e/x.txt"), "x");
    check("DELETE", "/documents/folder", "200", (await h.api(ws, "DELETE", docs("/folder?path=e"))).body);
    const refusedDocument = await h.api(ws, "POST", "/documents/upload-complete", { connectionId: conn.body.id, path: "../x", uploadId: "u", parts: [{ partNumber: 1, etag: "e" }] });
    expect(refusedDocument.status).toBe(400);
    check("POST", "/documents/upload-complete", "400", refusedDocument.body);
    const preferencesPath = `/notifications/preferences/${conn.body.id}`;
    expect(operation("PUT", "/notifications/preferences/:clientId")?.requestBody).toEqual({ $ref: "#/components/requestBodies/PutNotificationPreferencesInput" });
    const preferences = await h.api(ws, "PUT", preferencesPath, {
      preferences: [{ eventType: "PIPELINE_RUN_FAILED", channel: "SMS", isEnabled: true, recipients: ["+15551234567"], metadata: { team: "ops" } }],
    });
    expect(preferences.status).toBe(200);
    check("PUT", "/notifications/preferences/:clientId", "200", preferences.body);
    expect((await h.api(ws, "GET", preferencesPath)).body).toEqual(preferences.body);
    check("GET", "/notifications/sends", "200", (await h.api(ws, "GET", "/notifications/sends?status=sent")).body);
    expect(
      ((operation("GET", "/notifications/sends")?.parameters ?? []) as Json[]).filter((p) => p.in === "query").map((p) => p.name),
    ).toEqual(expect.arrayContaining(["page", "limit", "clientId", "runId", "status", "channel", "eventType"]));
    await recordArrival(h.svc, { workspaceId: ws.workspaceId, connectionId: conn.body.id, transport: "email", filename: "a.pdf", size: 3, outcome: "rejected", reason: "format", metadata: { sender: "a@b.example" } });
    await recordArrival(h.svc, { workspaceId: ws.workspaceId, connectionId: conn.body.id, transport: "email", outcome: "ignored", reason: "the message has no attachment" });
    const arrivals = await h.api(ws, "GET", `/connections/${conn.body.id}/arrivals?outcome=rejected`);
    expect(arrivals.body.data).toHaveLength(1);
    check("GET", "/connections/:id/arrivals", "200", arrivals.body);
    check("GET", "/connections/:id/arrivals", "400", (await h.api(ws, "GET", `/connections/${conn.body.id}/arrivals?outcome=lost`)).body);
    expect(
      ((operation("GET", "/connections/:id/arrivals")?.parameters ?? []) as Json[]).filter((p) => p.in === "query").map((p) => p.name),
    ).toEqual(expect.arrayContaining(["page", "limit", "outcome"]));
    // Outbound uploads: a session, a part (PUT takes the rows array), its status, completion, and a refusal.
    await h.api(ws, "POST", "/pipelines", { name: "Out", clientId: conn.body.id, schemaId: schema.body.id, direction: "outbound" });
    expect(operation("PUT", "/outbound/uploads/:uploadId/parts/:partNumber")?.requestBody).toEqual({ $ref: "#/components/requestBodies/OutboundPartRows" });
    const upload = await h.api(ws, "POST", "/outbound/uploads", { connectionName: "Documented", pipelineName: "Out", totalParts: 1 });
    check("POST", "/outbound/uploads", "200", upload.body);
    const uploadPath = `/outbound/uploads/${upload.body.uploadId}`;
    check("PUT", "/outbound/uploads/:uploadId/parts/:partNumber", "200", (await h.api(ws, "PUT", `${uploadPath}/parts/1`, [{ a: "x" }])).body);
    expect((await h.api(ws, "GET", uploadPath)).body.partsReceived).toBe(1);
    check("POST", "/outbound/uploads/:uploadId/complete", "200", (await h.api(ws, "POST", `${uploadPath}/complete`, { parts: [{ partNumber: 1 }] })).body);
    check("GET", "/outbound/uploads/:uploadId", "200", (await h.api(ws, "GET", uploadPath)).body);
    const refusedPart = await h.api(ws, "PUT", `${uploadPath}/parts/2`, []);
    expect(refusedPart.status).toBe(409);
    check("PUT", "/outbound/uploads/:uploadId/parts/:partNumber", "409", refusedPart.body);
    const refused = await h.api(ws, "POST", "/connections", { name: "" });
    expect(refused.status).toBe(400);
    check("POST", "/connections", "400", refused.body);
    const unknownKey = await h.request("GET", "/connections", { key: "fps_nope_nope" });
    expect(unknownKey.status).toBe(401);
    check("GET", "/connections", "401", unknownKey.body);
  });
});

describe("/docs", () => {
  const swaggerFile = (name: string) => createRequire(import.meta.url).resolve(`swagger-ui-dist/${name}`);

  test("serves an HTML page, without a key, that loads the local Swagger UI and /openapi.json", async () => {
    const r = await h.request("GET", "/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    const html = r.body as string;
    expect(html).toStartWith("<!doctype html>");
    expect(html).toContain('"/openapi.json"');
    expect(html).toContain('src="/docs/assets/swagger-ui-bundle.js"');
    expect(html).toContain('href="/docs/assets/swagger-ui.css"');
    expect(html).not.toMatch(/(src|href)="https?:/);
  });

  test.each([
    ["swagger-ui-bundle.js", "text/javascript"],
    ["swagger-ui.css", "text/css"],
  ])("/docs/assets/%s is the swagger-ui-dist file, served as %s", async (name, type) => {
    const res = await h.service.http.handle(new Request(`http://localhost/docs/assets/${name}`));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith(type);
    const served = new Uint8Array(await res.arrayBuffer());
    const onDisk = new Uint8Array(readFileSync(swaggerFile(name)));
    expect(served.byteLength).toBe(onDisk.byteLength);
    expect(Bun.hash(served)).toBe(Bun.hash(onDisk));
  });

  test("an unknown asset, or a path out of the asset folder, is a 404 with the standard error body", async () => {
    for (const path of ["/docs/assets/nope.js", "/docs/assets/index.html", "/docs/assets/..%2F..%2Fpackage.json", "/docs/assets/swagger-ui-bundle.js.map"]) {
      const r = await h.request("GET", path);
      expect(r.status, path).toBe(404);
      expect(r.body).toMatchObject({ statusCode: 404, error: "not_found" });
      expect(typeof r.body.message).toBe("string");
    }
  });
});
