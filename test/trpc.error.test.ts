import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { isAppError } from "../src/domain/errors";
import { createKey } from "../src/services/keys/create-key";
import { revokeKey } from "../src/services/keys/revoke-key";
import { TRANSFORMS } from "../src/services/pipelines/shapes";
import { appRouter } from "../trpc/router";
import { fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * tRPC refuses what REST refuses, with REST's message: in process the
 * TRPCError carries the tRPC code and the service error as its cause; over
 * HTTP the status is REST's and `error.data` carries `error` and
 * `statusCode`. Another workspace's ids are NOT_FOUND everywhere.
 */

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
const ids = { conn: "", email: "", schema: "", webhook: "", pipeline: "" };
const theirs = { conn: "", server: "", schema: "", webhook: "", pipeline: "", delivery: "", subscription: "" };

// biome-ignore lint/suspicious/noExplicitAny: REST and tRPC bodies are compared whole
type Any = any;


beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace({ name: "Mine" });
  other = await h.workspace({ name: "Theirs" });
  ids.conn = (await h.ok(ws, "POST", "/connections", { name: "Taken" })).id;
  ids.email = (await h.ok(ws, "POST", "/connections", { name: "Inbox", type: "EMAIL", emailAllowedFormats: ["csv"] })).id;
  ids.schema = (await h.ok(ws, "POST", "/schemas", { name: "Taken Schema", definition: { type: "object", properties: {} } })).id;
  ids.webhook = (await h.ok(ws, "POST", "/webhooks", { name: "Hook", url: "https://hooks.example.com/x" })).id;
  ids.pipeline = (await h.ok(ws, "POST", "/pipelines", { name: "Taken Pipeline", clientId: ids.conn, schemaId: ids.schema })).id;

  const c = await h.ok(other, "POST", "/connections", { name: "Their Conn", useHostedSFTP: false, sftpServer: { host: "their.example.com" } });
  theirs.conn = c.id;
  theirs.server = c.sftpServerDataId;
  theirs.schema = (await h.ok(other, "POST", "/schemas", { name: "Their Schema", definition: { type: "object", properties: {} } })).id;
  theirs.webhook = (await h.ok(other, "POST", "/webhooks", { name: "Their Hook", url: "https://their.example.com/h" })).id;
  theirs.pipeline = (await h.ok(other, "POST", "/pipelines", { name: "Their Pipeline", clientId: theirs.conn, schemaId: theirs.schema, webhookIds: [theirs.webhook] })).id;
  // Their subscription, and a delivery to their hook (an acknowledged run's event; a recorded failure, the name does not resolve here).
  theirs.subscription = (await h.ok(other, "POST", "/webhooks/zapier/pipeline-run-events/subscribe", { targetUrl: "https://their.example.com/zap" })).id;
  const theirPipeline = { id: theirs.pipeline, name: "Their Pipeline", connectionId: theirs.conn, connectionName: c.name, schemaId: theirs.schema };
  const theirRun = (await fixtureRun(h, other, theirPipeline, { rows: [] })).id;
  await h.ok(other, "PATCH", `/pipeline-runs/${theirRun}/status`, { status: "acknowledged" });
  for (let i = 0; i < 400 && !theirs.delivery; i++) {
    theirs.delivery = (await h.ok(other, "GET", `/webhooks/deliveries?webhookId=${theirs.webhook}`)).data[0]?.id ?? "";
    if (!theirs.delivery) await Bun.sleep(25);
  }
  expect(theirs.delivery).not.toBe("");
});

afterAll(async () => {
  await h.close();
});

type Caller = Record<string, Record<string, (input?: unknown) => Promise<unknown>>>;
const PROCEDURES = appRouter._def.procedures as unknown as Record<string, { _def: { type: "query" | "mutation" } }>;

async function callerError(w: TestWorkspace, path: string, input: unknown): Promise<TRPCError> {
  const [resource, name] = path.split(".") as [string, string];
  const caller = h.trpc(w) as unknown as Caller;
  try {
    await caller[resource]![name]!(input);
  } catch (e) {
    expect(e).toBeInstanceOf(TRPCError);
    return e as TRPCError;
  }
  throw new Error(`${path} did not refuse ${JSON.stringify(input)}`);
}

/** A procedure over HTTP the way a tRPC client sends it: queries as GET ?input=, mutations as POST. */
function overHttp(path: string, input: unknown, key: string | null = ws.apiKey) {
  if (PROCEDURES[path]?._def.type === "query") {
    const q = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(input))}`;
    return h.request("GET", `/trpc/${path}${q}`, { key });
  }
  return h.request("POST", `/trpc/${path}`, { key, body: input });
}

interface Case {
  title: string;
  path: string;
  input: () => unknown;
  rest: () => [method: string, path: string, body?: unknown];
  code: "BAD_REQUEST" | "NOT_FOUND" | "CONFLICT";
  status: 400 | 404 | 409;
  says: string;
}

const pipeline = (extra: Record<string, unknown>) => ({ name: "P", clientId: ids.conn, schemaId: ids.schema, ...extra });
const bad = { code: "BAD_REQUEST", status: 400 } as const;

const cases: Case[] = [
  {
    title: "connection type outside the enum",
    path: "connections.create",
    input: () => ({ name: "C", type: "FTP" }),
    rest: () => ["POST", "/connections", { name: "C", type: "FTP" }],
    ...bad,
    says: "type: must be one of SFTP, EMAIL",
  },
  {
    title: "missing connection name",
    path: "connections.create",
    input: () => ({ type: "SFTP" }),
    rest: () => ["POST", "/connections", { type: "SFTP" }],
    ...bad,
    says: "name: is required",
  },
  {
    title: "wrong member type",
    path: "connections.create",
    input: () => ({ name: "C", ipWhitelist: "10.0.0.1" }),
    rest: () => ["POST", "/connections", { name: "C", ipWhitelist: "10.0.0.1" }],
    ...bad,
    says: "ipWhitelist:",
  },
  {
    title: "EMAIL connection without formats",
    path: "connections.create",
    input: () => ({ name: "Mail", type: "EMAIL" }),
    rest: () => ["POST", "/connections", { name: "Mail", type: "EMAIL" }],
    ...bad,
    says: "emailAllowedFormats: is required",
  },
  {
    title: "duplicate connection name",
    path: "connections.create",
    input: () => ({ name: "Taken" }),
    rest: () => ["POST", "/connections", { name: "Taken" }],
    code: "CONFLICT",
    status: 409,
    says: "name: a connection named 'Taken' already exists",
  },
  {
    title: "update without a name",
    path: "connections.update",
    input: () => ({ id: ids.conn, data: { ipWhitelist: [] } }),
    rest: () => ["PATCH", `/connections/${ids.conn}`, { ipWhitelist: [] }],
    ...bad,
    says: "name: is required",
  },
  {
    title: "changing a connection's type",
    path: "connections.update",
    input: () => ({ id: ids.conn, data: { name: "Taken", type: "EMAIL" } }),
    rest: () => ["PATCH", `/connections/${ids.conn}`, { name: "Taken", type: "EMAIL" }],
    ...bad,
    says: "type: cannot change from SFTP to EMAIL",
  },
  {
    title: "unknown connection",
    path: "connections.get",
    input: () => ({ id: "conn_nope" }),
    rest: () => ["GET", "/connections/conn_nope"],
    code: "NOT_FOUND",
    status: 404,
    says: "connection 'conn_nope' not found",
  },
  {
    title: "deleting a connection pipelines use",
    path: "connections.delete",
    input: () => ({ id: ids.conn }),
    rest: () => ["DELETE", `/connections/${ids.conn}`],
    code: "CONFLICT",
    status: 409,
    says: "is used by pipelines 'Taken Pipeline'",
  },
  {
    title: "page size above the maximum",
    path: "connections.list",
    input: () => ({ limit: 500 }),
    rest: () => ["GET", "/connections?limit=500"],
    ...bad,
    says: "limit: must be at most 100",
  },
  {
    title: "definition that breaks the meta-schema",
    path: "schemas.create",
    input: () => ({ name: "S", definition: { type: "object", properties: { a: { type: 5 } } } }),
    rest: () => ["POST", "/schemas", { name: "S", definition: { type: "object", properties: { a: { type: 5 } } } }],
    ...bad,
    says: "definition.properties.a.type",
  },
  {
    title: "duplicate schema name",
    path: "schemas.create",
    input: () => ({ name: "Taken Schema", definition: { type: "object", properties: {} } }),
    rest: () => ["POST", "/schemas", { name: "Taken Schema", definition: { type: "object", properties: {} } }],
    code: "CONFLICT",
    status: 409,
    says: "name: a schema named 'Taken Schema' already exists",
  },
  {
    title: "mappings sent as a bare array",
    path: "pipelines.create",
    input: () => pipeline({ mappings: [{ source: "a", target: "b" }] }),
    rest: () => ["POST", "/pipelines", pipeline({ mappings: [{ source: "a", target: "b" }] })],
    ...bad,
    says: "mappings: must be an object; field mappings go under mappings.fieldMappings",
  },
  {
    title: "unknown transform",
    path: "pipelines.create",
    input: () => pipeline({ mappings: { fieldMappings: [{ source: "a", target: "b", transform: "rot13" }] } }),
    rest: () => ["POST", "/pipelines", pipeline({ mappings: { fieldMappings: [{ source: "a", target: "b", transform: "rot13" }] } })],
    ...bad,
    says: `unknown transform 'rot13'; allowed: ${TRANSFORMS.join(", ")}`,
  },
  {
    title: "pipeline naming an unknown schema",
    path: "pipelines.create",
    input: () => pipeline({ schemaId: "sch_nope" }),
    rest: () => ["POST", "/pipelines", pipeline({ schemaId: "sch_nope" })],
    code: "NOT_FOUND",
    status: 404,
    says: "schemaId: schema 'sch_nope' not found",
  },
  {
    title: "outbound pipeline over an EMAIL connection",
    path: "pipelines.update",
    input: () => ({ id: ids.pipeline, data: { clientId: ids.email, direction: "outbound" } }),
    rest: () => ["PATCH", `/pipelines/${ids.pipeline}`, { clientId: ids.email, direction: "outbound" }],
    ...bad,
    says: "direction: outbound pipelines deliver over SFTP",
  },
  {
    title: "isActive filter that is not a boolean",
    path: "pipelines.list",
    input: () => ({ isActive: "maybe" }),
    rest: () => ["GET", "/pipelines?isActive=maybe"],
    ...bad,
    says: "isActive: must be true or false",
  },
  {
    title: "webhook URL that is not http(s)",
    path: "webhooks.create",
    input: () => ({ name: "W", url: "javascript:alert(1)" }),
    rest: () => ["POST", "/webhooks", { name: "W", url: "javascript:alert(1)" }],
    ...bad,
    says: "url: must be an absolute http:// or https:// URL",
  },
  {
    title: "unknown webhook",
    path: "webhooks.delete",
    input: () => ({ id: "wh_nope" }),
    rest: () => ["DELETE", "/webhooks/wh_nope"],
    code: "NOT_FOUND",
    status: 404,
    says: "webhook 'wh_nope' not found",
  },
];

describe("the same refusal as REST", () => {
  test.each(cases.map((c) => [c.title, c] as const))("%s", async (_title, c) => {
    const [method, path, body] = c.rest();
    const rest = await h.api(ws, method, path, body);
    expect(rest.status).toBe(c.status);
    expect(rest.body.message).toContain(c.says);

    const e = await callerError(ws, c.path, c.input());
    expect(e.code).toBe(c.code);
    expect(e.message).toBe(rest.body.message);
    expect(isAppError(e.cause) && e.cause.code).toBe(rest.body.error);

    const r = await overHttp(c.path, c.input());
    expect(r.status).toBe(c.status);
    expect(r.body.error.message).toBe(rest.body.message);
    expect(r.body.error.data).toMatchObject({ code: c.code, httpStatus: c.status, path: c.path, error: rest.body.error, statusCode: rest.status });
    expect(r.body.error.data.stack).toBeUndefined();
  });

  test("the aggregated-mappings gate: BAD_REQUEST carrying feature_not_enabled", async () => {
    const input = pipeline({ mappings: { fieldMappings: [{ sources: ["a", "b"], target: "ab" }] } });
    const rest = await h.api(ws, "POST", "/pipelines", input);
    expect(rest.body.error).toBe("feature_not_enabled");
    const e = await callerError(ws, "pipelines.create", input);
    expect(e.code).toBe("BAD_REQUEST");
    expect(e.message).toBe(rest.body.message);
    const r = await overHttp("pipelines.create", input);
    expect(r.status).toBe(400);
    expect(r.body.error.data).toMatchObject({ error: "feature_not_enabled", statusCode: 400 });
    expect(r.body.error.message).toBe(rest.body.message);
  });

  test("nothing was written by the refused calls", async () => {
    const t = h.trpc(ws);
    expect((await t.connections.list()).data.map((c) => c.name).sort()).toEqual(["Inbox", "Taken"]);
    expect((await t.schemas.list()).data.map((s) => s.name)).toEqual(["Taken Schema"]);
    const p = await t.pipelines.get({ id: ids.pipeline });
    expect(p).toMatchObject({ clientId: ids.conn, direction: "inbound" });
    expect((await t.webhooks.list()).pagination.total).toBe(1);
  });
});

describe("the procedures' own input", () => {
  test("update without data: the same message in process and over HTTP", async () => {
    const e = await callerError(ws, "connections.update", { id: ids.conn });
    expect(e.code).toBe("BAD_REQUEST");
    expect(e.message).toBe("data: is required");
    const r = await overHttp("connections.update", { id: ids.conn });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe("data: is required");
    expect(r.body.error.data).toMatchObject({ error: "invalid_input", statusCode: 400 });
  });

  test("an empty id: the same message in process and over HTTP", async () => {
    const e = await callerError(ws, "schemas.get", { id: "" });
    expect(e.message).toBe("id: must not be empty");
    const r = await overHttp("schemas.get", { id: "" });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe("id: must not be empty");
    expect(r.body.error.data.error).toBe("invalid_input");
  });
});

describe("over HTTP", () => {
  const rawPost = (path: string, rawBody: string, contentType = "application/json", key: string | null = ws.apiKey) =>
    h.request("POST", `/trpc/${path}`, { key, rawBody, headers: { "content-type": contentType } });

  test("no key, an unknown key and a revoked key: 401 with REST's message", async () => {
    const extra = await createKey(h.svc, { workspaceId: ws.workspaceId, role: "admin", name: "short lived" });
    expect((await overHttp("connections.list", undefined, extra.apiKey)).status).toBe(200);
    await revokeKey(h.svc, { keyId: extra.id });

    for (const key of [null, "fps_not_a_key", extra.apiKey]) {
      const rest = await h.request("GET", "/connections", { key });
      expect(rest.status).toBe(401);
      for (const [path, input] of [
        ["connections.list", undefined],
        ["connections.create", { name: "Anon" }],
      ] as const) {
        const r = await overHttp(path, input, key);
        expect(r.status).toBe(401);
        expect(r.body.error.message).toBe(rest.body.message);
        expect(r.body.error.data).toMatchObject({ code: "UNAUTHORIZED", error: "unauthorized", statusCode: 401 });
      }
    }
    const revoked = await overHttp("connections.list", undefined, extra.apiKey);
    expect(revoked.body.error.message).toContain("revoked");
    expect((await h.trpc(ws).connections.list({ name: "Anon" })).data).toEqual([]);
  });

  test("an anonymous oversized body is a 401: it is not read", async () => {
    const r = await rawPost("connections.create", JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) }), "application/json", null);
    expect(r.status).toBe(401);
  });

  test("a body over the JSON limit: 413 with REST's message", async () => {
    const rawBody = JSON.stringify({ name: "big", sftpPassword: "x".repeat(1024 * 1024) });
    const rest = await h.request("POST", "/connections", { key: ws.apiKey, rawBody, headers: { "content-type": "application/json" } });
    expect(rest.status).toBe(413);
    const r = await rawPost("connections.create", rawBody);
    expect(r.status).toBe(413);
    expect(r.body.error.message).toBe(rest.body.message);
    expect(r.body.error.data).toMatchObject({ code: "PAYLOAD_TOO_LARGE", error: "payload_too_large", statusCode: 413 });
  });

  test("malformed JSON: 400 with REST's message", async () => {
    const rest = await h.request("POST", "/connections", { key: ws.apiKey, rawBody: '{"name":', headers: { "content-type": "application/json" } });
    const r = await rawPost("connections.create", '{"name":');
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe(rest.body.message);
    expect(r.body.error.data).toMatchObject({ error: "invalid_input", statusCode: 400 });
  });

  test("a body that is not JSON: 415 as on REST", async () => {
    const rest = await h.request("POST", "/connections", { key: ws.apiKey, rawBody: "<c/>", headers: { "content-type": "application/xml" } });
    expect(rest.status).toBe(415);
    const r = await rawPost("connections.create", "<c/>", "application/xml");
    expect(r.status).toBe(415);
    expect(r.body.error.message).toBe(rest.body.message);
    expect(r.body.error.data).toMatchObject({ error: "unsupported_media_type", statusCode: 415 });
  });

  test("malformed ?input=: 400", async () => {
    const r = await h.request("GET", "/trpc/connections.get?input=%7Bnot-json", { key: ws.apiKey });
    expect(r.status).toBe(400);
    expect(r.body.error.data).toMatchObject({ code: "BAD_REQUEST", error: "invalid_input", statusCode: 400 });
  });

  test("an unknown procedure: 404 not_found; a query sent as POST: 405", async () => {
    const missing = await overHttp("connections.purge", { id: ids.conn });
    expect(missing.status).toBe(404);
    expect(missing.body.error.data).toMatchObject({ code: "NOT_FOUND", error: "not_found", statusCode: 404 });
    const post = await h.request("POST", "/trpc/connections.get", { key: ws.apiKey, body: { id: ids.conn } });
    expect(post.status).toBe(405);
    expect(post.body.error.data.statusCode).toBe(405);
  });

  test("an unknown Service-Version: 400 as on REST", async () => {
    const rest = await h.request("GET", "/connections", { key: ws.apiKey, version: "2030-01-01" });
    const r = await h.request("GET", "/trpc/connections.list", { key: ws.apiKey, version: "2030-01-01" });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toBe(rest.body.message);
    expect(r.body.error.data).toMatchObject({ error: "unsupported_version", statusCode: 400 });
  });
});

describe("another workspace's ids", () => {
  /** Every procedure that takes an id, called with the other workspace's. */
  const BY_ID: Record<string, () => unknown> = {
    "connections.get": () => ({ id: theirs.conn }),
    "connections.update": () => ({ id: theirs.conn, data: { name: "Hijacked", sftpPassword: "mine" } }),
    "connections.delete": () => ({ id: theirs.conn }),
    "connections.test": () => ({ id: theirs.conn }),
    "schemas.get": () => ({ id: theirs.schema }),
    "schemas.update": () => ({ id: theirs.schema, data: { name: "Hijacked" } }),
    "schemas.delete": () => ({ id: theirs.schema }),
    "schemas.pipelines": () => ({ id: theirs.schema }),
    "pipelines.get": () => ({ id: theirs.pipeline }),
    "pipelines.update": () => ({ id: theirs.pipeline, data: { isActive: false, webhookIds: [] } }),
    "pipelines.delete": () => ({ id: theirs.pipeline }),
    "pipelines.preview": () => ({ id: theirs.pipeline, data: { sample: { filename: "a.csv", text: "sku\nA-1\n" } } }),
    "pipelines.previewDraft": () => ({ schemaId: theirs.schema, sample: { filename: "a.csv", text: "sku\nA-1\n" } }),
    "pipelines.versions": () => ({ id: theirs.pipeline }),
    "webhooks.get": () => ({ id: theirs.webhook }),
    "webhooks.update": () => ({ id: theirs.webhook, data: { url: "https://evil.example.com" } }),
    "webhooks.delete": () => ({ id: theirs.webhook }),
    "webhooks.rotateSecret": () => ({ id: theirs.webhook }),
    "webhooks.redeliver": () => ({ id: theirs.delivery }),
    "webhooks.unsubscribe": () => ({ id: theirs.subscription }),
    "notificationPreferences.get": () => ({ id: theirs.conn }),
    "notificationPreferences.put": () => ({
      id: theirs.conn,
      data: { preferences: [{ eventType: "PIPELINE_RUN_FAILED", channel: "EMAIL", isEnabled: true, recipients: ["mine@evil.example.com"] }] },
    }),
  };
  let before: unknown;
  const theirView = async () => {
    const t = h.trpc(other);
    return wireOf([
      await t.connections.get({ id: theirs.conn }),
      await t.schemas.get({ id: theirs.schema }),
      await t.pipelines.get({ id: theirs.pipeline }),
      await t.webhooks.get({ id: theirs.webhook }),
    ]);
  };
  const wireOf = (v: unknown) => JSON.parse(JSON.stringify(v));

  beforeAll(async () => {
    before = await theirView();
  });

  test("the table covers every procedure but list and create", () => {
    // Runs and files procedures have their own table in trpc.runs.test.ts; outbound ones in outbound.error.test.ts; documents ones in documents.error.test.ts.
    const expected = Object.keys(PROCEDURES).filter(
      (p) =>
        !p.endsWith(".list") &&
        !p.endsWith(".create") &&
        p !== "webhooks.deliveries" &&
        p !== "webhooks.subscribe" &&
        // A sample, not an id: nothing of another workspace to name.
        p !== "schemas.infer" &&
        p !== "schemas.check" &&
        !p.startsWith("runs.") &&
        !p.startsWith("files.") &&
        !p.startsWith("outbound.") &&
        !p.startsWith("documents.") &&
        // A person's own account, members, keys and workspace: scoped by the session, tested in people.test.ts.
        !p.startsWith("account.") &&
        !p.startsWith("members.") &&
        !p.startsWith("keys.") &&
        !p.startsWith("workspace."),
    );
    expect(Object.keys(BY_ID).sort()).toEqual(expected.sort());
  });

  test.each(Object.keys(BY_ID))("%s: NOT_FOUND in process, 404 over HTTP", async (path) => {
    const input = BY_ID[path]!();
    const id = (input as { id?: string; schemaId?: string }).id ?? (input as { schemaId: string }).schemaId;
    const e = await callerError(ws, path, input);
    expect(e.code).toBe("NOT_FOUND");
    expect(e.message).toContain(`'${id}' not found`);
    const r = await overHttp(path, input);
    expect(r.status).toBe(404);
    expect(r.body.error.message).toBe(e.message);
    expect(r.body.error.data).toMatchObject({ error: "not_found", statusCode: 404 });
  });

  test("naming another workspace's connection, schema, webhook or server is NOT_FOUND", async () => {
    const refusals: [string, unknown, string][] = [
      ["pipelines.create", pipeline({ name: "X1", clientId: theirs.conn }), `clientId: connection '${theirs.conn}' not found`],
      ["pipelines.create", pipeline({ name: "X2", schemaId: theirs.schema }), `schemaId: schema '${theirs.schema}' not found`],
      ["pipelines.create", pipeline({ name: "X3", webhookIds: [theirs.webhook] }), `webhookIds[0]: webhook '${theirs.webhook}' not found`],
      ["pipelines.update", { id: ids.pipeline, data: { schemaId: theirs.schema } }, `schemaId: schema '${theirs.schema}' not found`],
      ["connections.create", { name: "X4", sftpServerDataId: theirs.server }, `sftpServerDataId: SFTP server '${theirs.server}' not found`],
      ["connections.update", { id: ids.conn, data: { name: "Taken", useHostedSFTP: false, sftpServerDataId: theirs.server } }, `sftpServerDataId: SFTP server '${theirs.server}' not found`],
    ];
    for (const [path, input, message] of refusals) {
      const e = await callerError(ws, path, input);
      expect(e.message).toBe(message);
      expect(e.code).toBe("NOT_FOUND");
      const r = await overHttp(path, input);
      expect(r.status).toBe(404);
      expect(r.body.error.message).toBe(message);
    }
  });

  test("lists show nothing of the other workspace, whatever the filter", async () => {
    const t = h.trpc(ws);
    const mine = { connections: [ids.conn, ids.email].sort(), schemas: [ids.schema], pipelines: [ids.pipeline], webhooks: [ids.webhook] };
    expect((await t.connections.list({ limit: 100 })).data.map((x) => x.id).sort()).toEqual(mine.connections);
    expect((await t.schemas.list({ limit: 100 })).data.map((x) => x.id)).toEqual(mine.schemas);
    expect((await t.pipelines.list({ limit: 100 })).data.map((x) => x.id)).toEqual(mine.pipelines);
    expect((await t.webhooks.list({ limit: 100 })).data.map((x) => x.id)).toEqual(mine.webhooks);
    expect((await t.pipelines.list({ clientId: theirs.conn })).pagination.total).toBe(0);
    expect((await t.pipelines.list({ connectionName: "their" })).pagination.total).toBe(0);
    expect((await t.connections.list({ name: "their" })).pagination.total).toBe(0);
    expect((await t.schemas.list({ name: "their" })).pagination.total).toBe(0);
    const overHttpList = await overHttp("pipelines.list", { connectionName: "their" });
    expect(overHttpList.body.result.data).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0 } });
  });

  test("the other workspace's objects are exactly as before", async () => {
    expect(await theirView()).toEqual(before);
  });
});
