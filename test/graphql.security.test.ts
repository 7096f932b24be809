import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey } from "../src/services/keys/create-key";
import { revokeKey } from "../src/services/keys/revoke-key";
import { fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * /graphql answers only a valid key, and a key sees only its own workspace:
 * another workspace's id is NOT_FOUND on every field that takes one, and
 * nothing of another workspace shows in a list.
 */

let h: Harness;
let owner: TestWorkspace;
let intruder: TestWorkspace;
const a = { connection: "", server: "", schema: "", webhook: "", pipeline: "", run: "", delivery: "" };
const b = { connection: "", schema: "", pipeline: "" };

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are compared whole
type Any = any;


beforeAll(async () => {
  h = await Harness.start();
  owner = await h.workspace({ name: "Owner" });
  intruder = await h.workspace({ name: "Intruder" });
  const conn = await h.ok(owner, "POST", "/connections", {
    name: "Owner Server",
    useHostedSFTP: false,
    sftpUsername: "owner",
    sftpPassword: "owner-secret",
    sftpServer: { host: "sftp.owner.example" },
  });
  a.connection = conn.id;
  a.server = conn.sftpServerDataId;
  a.schema = (await h.ok(owner, "POST", "/schemas", { name: "Owner Schema", definition: { type: "object", properties: {} } })).id;
  a.webhook = (await h.ok(owner, "POST", "/webhooks", { name: "Owner Hook", url: "https://owner.example.com/hook" })).id;
  a.pipeline = (await h.ok(owner, "POST", "/pipelines", { name: "Owner Pipeline", clientId: a.connection, schemaId: a.schema, webhookIds: [a.webhook] })).id;
  const ownerPipeline = { id: a.pipeline, name: "Owner Pipeline", connectionId: a.connection, connectionName: "Owner Server", schemaId: a.schema };
  a.run = (await fixtureRun(h, owner, ownerPipeline, { rows: [{ sku: "A-1" }] })).id;
  // A delivery of the owner's (redeliverWebhookDelivery): another run acknowledged, its event to the owner's hook (a recorded failure: the name does not resolve here).
  const acked = (await fixtureRun(h, owner, ownerPipeline, { rows: [] })).id;
  await h.ok(owner, "PATCH", `/pipeline-runs/${acked}/status`, { status: "acknowledged" });
  for (let i = 0; i < 400 && !a.delivery; i++) {
    a.delivery = (await h.ok(owner, "GET", `/webhooks/deliveries?pipelineRunId=${acked}`)).data[0]?.id ?? "";
    if (!a.delivery) await Bun.sleep(25);
  }
  expect(a.delivery).not.toBe("");

  b.connection = (await h.ok(intruder, "POST", "/connections", { name: "Intruder Conn" })).id;
  b.schema = (await h.ok(intruder, "POST", "/schemas", { name: "Intruder Schema", definition: { type: "object", properties: {} } })).id;
  b.pipeline = (await h.ok(intruder, "POST", "/pipelines", { name: "Intruder Pipeline", clientId: b.connection, schemaId: b.schema })).id;
});

afterAll(async () => {
  await h.close();
});

const ANY_QUERY = "{ connections { data { id } } }";

describe("authentication", () => {
  test("no key: 401 with a GraphQL-shaped body carrying REST's message", async () => {
    const g = await h.graphql(null, ANY_QUERY);
    const rest = await h.request("GET", "/connections");
    expect(rest.status).toBe(401);
    expect(g.status).toBe(401);
    expect(g.body.data).toBeUndefined();
    expect(g.body.errors).toEqual([{ message: rest.body.message, extensions: { code: "UNAUTHENTICATED", error: "unauthorized", statusCode: 401, requestId: expect.any(String) } }]);
  });

  test("an unknown or malformed key: 401", async () => {
    for (const key of ["fps_live_not-a-real-key", "garbage", `${owner.apiKey}x`]) {
      const g = await h.graphql(key, ANY_QUERY);
      expect(g.status).toBe(401);
      expect(g.body.errors?.[0]?.extensions.code).toBe("UNAUTHENTICATED");
      expect(g.body.errors?.[0]?.message).toContain("x-api-key");
    }
  });

  test("without a key, introspection and GET queries are refused too", async () => {
    const intro = await h.graphql(null, "{ __schema { types { name } } }");
    expect(intro.status).toBe(401);
    const get = await h.request("GET", `/graphql?query=${encodeURIComponent(ANY_QUERY)}`);
    expect(get.status).toBe(401);
    expect(get.body.errors[0].extensions.error).toBe("unauthorized");
  });

  test("a mutation without a key writes nothing", async () => {
    const g = await h.request("POST", "/graphql", { body: { query: 'mutation { createWebhook(input: { name: "Anon", url: "https://x.example.com" }) { id } }' } });
    expect(g.status).toBe(401);
    const hooks = await h.api(owner, "GET", "/webhooks");
    expect(hooks.body.data.map((w: Any) => w.name)).toEqual(["Owner Hook"]);
  });

  test("a revoked key: 401 from the next request on, while the workspace's other key keeps working", async () => {
    const extra = await createKey(h.svc, { workspaceId: owner.workspaceId, role: "member", name: "to revoke" });
    const before = await h.graphql(extra.apiKey, ANY_QUERY);
    expect(before.status).toBe(200);
    expect(before.body.data?.connections.data.map((c: Any) => c.id)).toEqual([a.connection]);

    await revokeKey(h.svc, { keyId: extra.id, workspaceId: owner.workspaceId });
    const after = await h.graphql(extra.apiKey, ANY_QUERY);
    const rest = await h.request("GET", "/connections", { key: extra.apiKey });
    expect(after.status).toBe(401);
    expect(after.body.errors?.[0]?.message).toBe(rest.body.message);
    expect(after.body.errors?.[0]?.message).toContain("revoked");
    expect(after.body.errors?.[0]?.extensions).toEqual({ code: "UNAUTHENTICATED", error: "unauthorized", statusCode: 401 , requestId: expect.any(String) });
    expect((await h.graphql(owner.apiKey, ANY_QUERY)).status).toBe(200);
  });

  test("an anonymous oversized body is refused as 401 before it is read", async () => {
    const rawBody = JSON.stringify({ query: ANY_QUERY, variables: { pad: "x".repeat(2 * 1024 * 1024) } });
    const r = await h.request("POST", "/graphql", { rawBody, headers: { "content-type": "application/json" } });
    expect(r.status).toBe(401);
  });
});

/** Every root field that takes an id, called by the intruder with the owner's id. */
const BY_ID: Record<string, { op: string; rest: () => [string, string, unknown?]; id: () => string }> = {
  connection: { op: "query($id: ID!) { connection(id: $id) { id name } }", id: () => a.connection, rest: () => ["GET", `/connections/${a.connection}`] },
  schema: { op: "query($id: ID!) { schema(id: $id) { id definition } }", id: () => a.schema, rest: () => ["GET", `/schemas/${a.schema}`] },
  pipeline: { op: "query($id: ID!) { pipeline(id: $id) { id mappings { options } } }", id: () => a.pipeline, rest: () => ["GET", `/pipelines/${a.pipeline}`] },
  webhook: { op: "query($id: ID!) { webhook(id: $id) { id url } }", id: () => a.webhook, rest: () => ["GET", `/webhooks/${a.webhook}`] },
  updateConnection: {
    op: 'mutation($id: ID!) { updateConnection(id: $id, input: { name: "Hijacked", sftpPassword: "mine" }) { id } }',
    id: () => a.connection,
    rest: () => ["PATCH", `/connections/${a.connection}`, { name: "Hijacked", sftpPassword: "mine" }],
  },
  testConnection: { op: "mutation($id: ID!) { testConnection(id: $id) { ok } }", id: () => a.connection, rest: () => ["POST", `/connections/${a.connection}/test-connection`] },
  deleteConnection: { op: "mutation($id: ID!) { deleteConnection(id: $id) { id } }", id: () => a.connection, rest: () => ["DELETE", `/connections/${a.connection}`] },
  updateSchema: {
    op: 'mutation($id: ID!) { updateSchema(id: $id, input: { name: "Hijacked" }) { id } }',
    id: () => a.schema,
    rest: () => ["PATCH", `/schemas/${a.schema}`, { name: "Hijacked" }],
  },
  deleteSchema: { op: "mutation($id: ID!) { deleteSchema(id: $id) { id } }", id: () => a.schema, rest: () => ["DELETE", `/schemas/${a.schema}`] },
  updatePipeline: {
    op: "mutation($id: ID!) { updatePipeline(id: $id, input: { isActive: false, webhookIds: [] }) { id } }",
    id: () => a.pipeline,
    rest: () => ["PATCH", `/pipelines/${a.pipeline}`, { isActive: false, webhookIds: [] }],
  },
  deletePipeline: { op: "mutation($id: ID!) { deletePipeline(id: $id) { id } }", id: () => a.pipeline, rest: () => ["DELETE", `/pipelines/${a.pipeline}`] },
  previewPipeline: {
    op: 'mutation($id: ID!) { previewPipeline(id: $id, input: { sample: { filename: "a.csv", text: "sku\\nA-1\\n" } }) { columns } }',
    id: () => a.pipeline,
    // REST looks the pipeline up before it reads a byte of the sample.
    rest: () => ["POST", `/pipelines/${a.pipeline}/preview`],
  },
  updateWebhook: {
    op: 'mutation($id: ID!) { updateWebhook(id: $id, input: { url: "https://evil.example.com" }) { id } }',
    id: () => a.webhook,
    rest: () => ["PATCH", `/webhooks/${a.webhook}`, { url: "https://evil.example.com" }],
  },
  deleteWebhook: { op: "mutation($id: ID!) { deleteWebhook(id: $id) { id } }", id: () => a.webhook, rest: () => ["DELETE", `/webhooks/${a.webhook}`] },
  rotateWebhookSecret: { op: "mutation($id: ID!) { rotateWebhookSecret(id: $id) { id } }", id: () => a.webhook, rest: () => ["POST", `/webhooks/${a.webhook}/rotate-secret`] },
  redeliverWebhookDelivery: {
    op: "mutation($id: ID!) { redeliverWebhookDelivery(id: $id) { id } }",
    id: () => a.delivery,
    rest: () => ["POST", `/webhooks/deliveries/${a.delivery}/redeliver`],
  },
  run: { op: "query($id: ID!) { run(id: $id) { id status } }", id: () => a.run, rest: () => ["GET", `/pipeline-runs/${a.run}`] },
  acknowledgeRun: {
    op: "mutation($id: ID!) { acknowledgeRun(id: $id) { id } }",
    id: () => a.run,
    rest: () => ["PATCH", `/pipeline-runs/${a.run}/status`, { status: "acknowledged" }],
  },
  retryRun: { op: "mutation($id: ID!) { retryRun(id: $id) { id } }", id: () => a.run, rest: () => ["POST", `/pipeline-runs/${a.run}/retry`] },
  reprocessRun: { op: "mutation($id: ID!) { reprocessRun(id: $id, version: 1) { id } }", id: () => a.run, rest: () => ["POST", `/pipeline-runs/${a.run}/reprocess`, { version: 1 }] },
  pipelineVersions: {
    op: "query($id: ID!) { pipelineVersions(id: $id) { data { version } } }",
    id: () => a.pipeline,
    rest: () => ["GET", `/pipelines/${a.pipeline}/versions`],
  },
  notificationPreferences: {
    op: "query($id: ID!) { notificationPreferences(id: $id) { id recipients } }",
    id: () => a.connection,
    rest: () => ["GET", `/notifications/preferences/${a.connection}`],
  },
  upsertNotificationPreferences: {
    op: 'mutation($id: ID!) { upsertNotificationPreferences(id: $id, input: { preferences: [{ eventType: PIPELINE_RUN_FAILED, channel: EMAIL, isEnabled: true, recipients: ["mine@evil.example.com"] }] }) { id } }',
    id: () => a.connection,
    rest: () => [
      "PUT",
      `/notifications/preferences/${a.connection}`,
      { preferences: [{ eventType: "PIPELINE_RUN_FAILED", channel: "EMAIL", isEnabled: true, recipients: ["mine@evil.example.com"] }] },
    ],
  },
  runFileLink: {
    op: "query($id: ID!) { runFileLink(id: $id, which: processed) { url } }",
    id: () => a.run,
    rest: () => ["GET", `/files/pipeline-runs/${a.run}/processed`],
  },
};

describe("another workspace's ids", () => {
  let ownerView: Any;
  const snapshot = async () => ({
    connection: (await h.api(owner, "GET", `/connections/${a.connection}`)).body,
    schema: (await h.api(owner, "GET", `/schemas/${a.schema}`)).body,
    pipeline: (await h.api(owner, "GET", `/pipelines/${a.pipeline}`)).body,
    webhook: (await h.api(owner, "GET", `/webhooks/${a.webhook}`)).body,
    notificationPreferences: (await h.api(owner, "GET", `/notifications/preferences/${a.connection}`)).body,
  });

  beforeAll(async () => {
    ownerView = await snapshot();
  });

  test("the table covers every root field that takes an id", async () => {
    const g = await h.graphql(owner.apiKey, "{ __schema { queryType { fields { name args { name } } } mutationType { fields { name args { name } } } } }");
    const s = g.body.data.__schema;
    const withId = [...s.queryType.fields, ...s.mutationType.fields].filter((f: Any) => f.args.some((x: Any) => x.name === "id")).map((f: Any) => f.name);
    expect(withId.sort()).toEqual(Object.keys(BY_ID).sort());
  });

  test.each(Object.keys(BY_ID))("%s answers NOT_FOUND with REST's message", async (field) => {
    const c = BY_ID[field]!;
    const [method, path, body] = c.rest();
    const rest = await h.api(intruder, method, path, body);
    expect(rest.status).toBe(404);
    const g = await h.graphql(intruder.apiKey, c.op, { id: c.id() });
    expect(g.status).toBe(200);
    // Root fields are nullable: the refused field is null, the response is not.
    expect(Object.values(g.body.data ?? { missing: "data" })).toEqual([null]);
    expect(g.body.errors).toHaveLength(1);
    expect(g.body.errors?.[0]?.message).toBe(rest.body.message);
    expect(g.body.errors?.[0]?.message).toContain(c.id());
    expect(g.body.errors?.[0]?.extensions).toEqual({ code: "NOT_FOUND", error: "not_found", statusCode: 404 , requestId: expect.any(String) });
  });

  test("references to another workspace's objects are NOT_FOUND when creating and updating", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      [
        "mutation($v: CreatePipelineInput!) { createPipeline(input: $v) { id } }",
        { name: "Steal Conn", clientId: a.connection, schemaId: b.schema },
        `clientId: connection '${a.connection}' not found`,
      ],
      [
        "mutation($v: CreatePipelineInput!) { createPipeline(input: $v) { id } }",
        { name: "Steal Schema", clientId: b.connection, schemaId: a.schema },
        `schemaId: schema '${a.schema}' not found`,
      ],
      [
        "mutation($v: CreatePipelineInput!) { createPipeline(input: $v) { id } }",
        { name: "Steal Hook", clientId: b.connection, schemaId: b.schema, webhookIds: [a.webhook] },
        `webhookIds[0]: webhook '${a.webhook}' not found`,
      ],
      [
        `mutation($v: UpdatePipelineInput!) { updatePipeline(id: "${b.pipeline}", input: $v) { id } }`,
        { clientId: a.connection },
        `clientId: connection '${a.connection}' not found`,
      ],
      [
        `mutation($v: UpdatePipelineInput!) { updatePipeline(id: "${b.pipeline}", input: $v) { id } }`,
        { webhookIds: [a.webhook] },
        `webhookIds[0]: webhook '${a.webhook}' not found`,
      ],
      [
        `mutation($v: UpdateConnectionInput!) { updateConnection(id: "${b.connection}", input: $v) { id } }`,
        { name: "Intruder Conn", useHostedSFTP: false, sftpServerDataId: a.server },
        `sftpServerDataId: SFTP server '${a.server}' not found`,
      ],
      [
        "mutation($v: CreateConnectionInput!) { createConnection(input: $v) { id } }",
        { name: "Shared Server", sftpServerDataId: a.server },
        `sftpServerDataId: SFTP server '${a.server}' not found`,
      ],
    ];
    for (const [op, v, message] of cases) {
      const g = await h.graphql(intruder.apiKey, op, { v });
      expect(g.body.errors?.[0]?.message).toBe(message);
      expect(g.body.errors?.[0]?.extensions.code).toBe("NOT_FOUND");
    }
  });

  test("lists show nothing of the other workspace, whatever the filter", async () => {
    const g = await h.graphql(
      intruder.apiKey,
      `query($conn: ID!) {
        connections(limit: 100) { data { id } pagination { total } }
        schemas(limit: 100) { data { id } pagination { total } }
        pipelines(limit: 100) { data { id } pagination { total } }
        webhooks(limit: 100) { data { id } pagination { total } }
        byClient: pipelines(clientId: $conn) { data { id } pagination { total } }
        byName: pipelines(connectionName: "owner") { data { id } pagination { total } }
        named: connections(name: "Owner") { data { id } pagination { total } }
      }`,
      { conn: a.connection },
    );
    expect(g.body.errors).toBeUndefined();
    const d = g.body.data;
    expect(d.connections).toEqual({ data: [{ id: b.connection }], pagination: { total: 1 } });
    expect(d.schemas).toEqual({ data: [{ id: b.schema }], pagination: { total: 1 } });
    expect(d.pipelines).toEqual({ data: [{ id: b.pipeline }], pagination: { total: 1 } });
    expect(d.webhooks).toEqual({ data: [], pagination: { total: 0 } });
    for (const k of ["byClient", "byName", "named"]) expect(d[k]).toEqual({ data: [], pagination: { total: 0 } });

    const own = await h.graphql(owner.apiKey, "{ pipelines(connectionName: \"owner\") { data { id webhooks { id } } } }");
    expect(own.body.data.pipelines.data).toEqual([{ id: a.pipeline, webhooks: [{ id: a.webhook }] }]);
  });

  test("the owner's objects are exactly as before the intruder's attempts", async () => {
    expect(await snapshot()).toEqual(ownerView);
    expect(ownerView.connection.credentialsSet).toEqual(["sftpPassword"]);
    expect(ownerView.pipeline.webhooks).toEqual([{ id: a.webhook, name: "Owner Hook", url: "https://owner.example.com/hook" }]);
  });
});
