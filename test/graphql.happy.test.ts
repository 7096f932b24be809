import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SECRET_FIELDS } from "../src/services/connections/shapes";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * GraphQL over the same services as REST: every object read or written
 * through /graphql equals what REST (2026-05-25) returns for it. GraphQL
 * answers null where REST leaves a member out, so results are compared with
 * their nulls removed.
 */

const CONNECTION = `id name workspaceId type useHostedSFTP sftpUsername awsUserName awsPublicKey ipWhitelist sftpServerDataId
  sftpServer { id hosted host port rootDirectory inboundFolder outboundFolder }
  emailInbox { inboundAddress } emailAllowedFormats emailAllowedSenders emailSubjectFilter credentialsSet createdAt updatedAt`;
const SCHEMA = "id name workspaceId description definition isActive createdAt updatedAt";
const PIPELINE = `id name workspaceId isActive clientId schemaId direction version createdAt updatedAt
  mappings { fieldMappings { target source value sources delimiter transform } options validations }
  webhooks { id name url }`;
const WEBHOOK = "id name url workspaceId isActive eventTypes description kind createdAt updatedAt";
const PAGINATION = "pagination { page limit total totalPages }";

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});

afterAll(async () => {
  await h.close();
});

// biome-ignore lint/suspicious/noExplicitAny: GraphQL results are checked member by member
type Any = any;

async function gql(query: string, variables?: Record<string, unknown>, w: TestWorkspace = ws): Promise<Any> {
  const r = await h.graphql(w.apiKey, query, variables);
  expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
  expect(r.status).toBe(200);
  expect(r.headers.get("service-version")).toBe("2026-05-25");
  return r.body.data;
}

async function rest(method: string, path: string, body?: unknown, w: TestWorkspace = ws): Promise<Any> {
  const r = await h.api(w, method, path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

/** GraphQL's null stands for a member REST leaves out. */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== null)
        .map(([k, x]) => [k, withoutNulls(x)]),
    );
  }
  return v;
}

/** Every member REST returns is in the GraphQL result with the same value; GraphQL's extra members are null. */
function expectSameObject(fromGraphql: unknown, fromRest: unknown) {
  expect(withoutNulls(fromGraphql)).toEqual(fromRest as object);
}

describe("connections", () => {
  let hostedId = "";

  test("createConnection (hosted) answers what REST then reads back, without the password", async () => {
    const { createConnection: c } = await gql(
      `mutation($input: CreateConnectionInput!) { createConnection(input: $input) { ${CONNECTION} } }`,
      { input: { name: "Acme Hosted", sftpPassword: "s3cret-Passw0rd", ipWhitelist: ["10.0.0.0/8", "192.168.1.5"] } },
    );
    hostedId = c.id;
    expect(c.id).toMatch(/^conn_/);
    expect(c.type).toBe("SFTP");
    expect(c.useHostedSFTP).toBe(true);
    expect(c.workspaceId).toBe(ws.workspaceId);
    expect(c.sftpUsername).toMatch(/^acme-hosted-[a-z0-9]{6}$/);
    expect(c.credentialsSet).toEqual(["sftpPassword"]);
    expect(c.ipWhitelist).toEqual(["10.0.0.0/8", "192.168.1.5"]);
    expect(c.sftpServer.hosted).toBe(true);
    expectSameObject(c, await rest("GET", `/connections/${c.id}`));
  });

  test("createConnection (self-hosted) binds a server record that REST shows the same way", async () => {
    const { createConnection: c } = await gql(
      `mutation($input: CreateConnectionInput!) { createConnection(input: $input) { ${CONNECTION} } }`,
      {
        input: {
          name: "Partner Own Server",
          useHostedSFTP: false,
          sftpUsername: "partner",
          sftpPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
          sftpServer: { host: "sftp.partner.example", port: 2022, rootDirectory: "data/", inboundFolder: "in" },
        },
      },
    );
    expect(c.useHostedSFTP).toBe(false);
    expect(c.sftpServer).toMatchObject({ hosted: false, host: "sftp.partner.example", port: 2022, rootDirectory: "/data", inboundFolder: "/in" });
    expect(c.sftpServerDataId).toBe(c.sftpServer.id);
    expect(c.credentialsSet).toEqual(["sftpPrivateKey"]);
    expectSameObject(c, await rest("GET", `/connections/${c.id}`));
  });

  test("createConnection (EMAIL) gets an inbound address and normalised formats", async () => {
    const { createConnection: c } = await gql(
      `mutation($input: CreateConnectionInput!) { createConnection(input: $input) { ${CONNECTION} } }`,
      { input: { name: "Mailed Orders", type: "EMAIL", emailAllowedFormats: ["CSV", ".json"], emailAllowedSenders: ["@partner.example"] } },
    );
    expect(c.type).toBe("EMAIL");
    expect(c.emailAllowedFormats).toEqual(["csv", "json"]);
    expect(c.emailInbox.inboundAddress).toMatch(/^mailed-orders-[a-z0-9]{6}@/);
    expect(c.sftpServer).toBeNull();
    expect(c.sftpUsername).toBeNull();
    expectSameObject(c, await rest("GET", `/connections/${c.id}`));
  });

  test("connection(id) reads what REST created", async () => {
    const created = await rest("POST", "/connections", { name: "Made Over REST", awsPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBx test@host" });
    const { connection } = await gql(`query($id: ID!) { connection(id: $id) { ${CONNECTION} } }`, { id: created.id });
    expectSameObject(connection, created);
    expect(connection.awsPublicKey).toBe("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBx test@host");
  });

  test("connections lists the same page as REST, with a pagination object", async () => {
    const restAll = await h.api(ws, "GET", "/connections?limit=100");
    const total = Number(restAll.headers.get("x-total-count"));
    expect(total).toBe(4);
    const { connections: all } = await gql(`{ connections(limit: 100) { data { ${CONNECTION} } ${PAGINATION} } }`);
    expect(all.pagination).toEqual({ page: 1, limit: 100, total, totalPages: 1 });
    expectSameObject(all.data, restAll.body);

    const restPage = await h.api(ws, "GET", "/connections?page=2&limit=3");
    const { connections: page2 } = await gql(`{ connections(page: 2, limit: 3) { data { id } ${PAGINATION} } }`);
    expect(page2.pagination).toEqual({ page: 2, limit: 3, total: 4, totalPages: 2 });
    expect(page2.data.map((c: Any) => c.id)).toEqual(restPage.body.map((c: Any) => c.id));
    expect(page2.data).toHaveLength(1);

    const { connections: dflt } = await gql(`{ connections { ${PAGINATION} } }`);
    expect(dflt.pagination).toEqual({ page: 1, limit: 20, total: 4, totalPages: 1 });
  });

  test("connections filters by type and by part of the name, as REST does", async () => {
    const { connections: email } = await gql(`{ connections(type: EMAIL) { data { name type } ${PAGINATION} } }`);
    expect(email.data).toEqual([{ name: "Mailed Orders", type: "EMAIL" }]);
    expect(email.pagination.total).toBe(1);
    const { connections: named } = await gql(`{ connections(name: "ACME") { data { id } } }`);
    const restNamed = await rest("GET", "/connections?name=ACME");
    expect(named.data.map((c: Any) => c.id)).toEqual(restNamed.map((c: Any) => c.id));
    expect(named.data.map((c: Any) => c.id)).toEqual([hostedId]);
  });

  test("updateConnection changes what REST reads; null clears a credential", async () => {
    h.clock.advance(60_000);
    const { updateConnection: u } = await gql(
      `mutation($id: ID!, $input: UpdateConnectionInput!) { updateConnection(id: $id, input: $input) { ${CONNECTION} } }`,
      { id: hostedId, input: { name: "Acme Hosted (renamed)", sftpPassword: null, awsPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBy" } },
    );
    expect(u.name).toBe("Acme Hosted (renamed)");
    expect(u.credentialsSet).toEqual([]);
    expect(u.ipWhitelist).toEqual(["10.0.0.0/8", "192.168.1.5"]);
    expect(new Date(u.updatedAt).getTime()).toBeGreaterThan(new Date(u.createdAt).getTime());
    expectSameObject(u, await rest("GET", `/connections/${hostedId}`));
  });

  test("testConnection reports the checks of a hosted connection, as REST does", async () => {
    const { testConnection: bare } = await gql(
      `mutation($id: ID!) { testConnection(id: $id) { ok connectionId checks { name status message durationMs } } }`,
      { id: hostedId },
    );
    expect(bare.connectionId).toBe(hostedId);
    // hosted_server probes the service's SFTP address; this harness runs no hosted server, so it reports what it finds.
    expect(bare.checks.map((c: Any) => c.name)).toEqual(["hosted_account", "credentials", "hosted_server"]);
    expect(bare.checks.slice(0, 2).map((c: Any) => c.status)).toEqual(["passed", "passed"]);
    expect(bare.ok).toBe(bare.checks[2].status !== "failed");
    const untimed = (r: Any) => ({ ...r, checks: r.checks.map(({ durationMs: _, ...c }: Any) => c) });
    expectSameObject(untimed(bare), untimed(await rest("POST", `/connections/${hostedId}/test-connection`)));

    const { createConnection: noCreds } = await gql(`mutation { createConnection(input: { name: "No Credentials" }) { id } }`);
    const { testConnection: failing } = await gql(`mutation($id: ID!) { testConnection(id: $id) { ok checks { name status } } }`, {
      id: noCreds.id,
    });
    expect(failing.ok).toBe(false);
    expect(failing.checks).toContainEqual({ name: "credentials", status: "failed" });
  });

  test("deleteConnection removes it for REST too", async () => {
    const { createConnection: c } = await gql(`mutation { createConnection(input: { name: "Short Lived" }) { id } }`);
    const { deleteConnection } = await gql(`mutation($id: ID!) { deleteConnection(id: $id) { id deleted } }`, { id: c.id });
    expect(deleteConnection).toEqual({ id: c.id, deleted: true });
    expect((await h.api(ws, "GET", `/connections/${c.id}`)).status).toBe(404);
  });
});

describe("credentials are never returned", () => {
  test("the Connection type has no credential field at all", async () => {
    const { __type } = await gql(`{ __type(name: "Connection") { fields { name } } }`);
    const names = __type.fields.map((f: Any) => f.name);
    expect(names).toContain("credentialsSet");
    for (const secret of SECRET_FIELDS) expect(names).not.toContain(secret);
    const r = await h.graphql(ws.apiKey, "{ connections { data { id sftpPassword } } }");
    expect(r.body.errors?.[0]?.message).toContain('Cannot query field "sftpPassword" on type "Connection"');
    expect(r.body.data).toBeUndefined();
  });

  test("no response carries a stored secret's value", async () => {
    const secrets = { sftpPassword: "pw-Zq8#unique", awsPassword: "aws-Xy7$unique" };
    const created = await h.graphql(ws.apiKey, `mutation($input: CreateConnectionInput!) { createConnection(input: $input) { ${CONNECTION} } }`, {
      input: { name: "Secretive", ...secrets },
    });
    const id = created.body.data?.createConnection.id as string;
    expect(created.body.data?.createConnection.credentialsSet).toEqual(["sftpPassword", "awsPassword"]);
    const read = await h.graphql(ws.apiKey, `query($id: ID!) { connection(id: $id) { ${CONNECTION} } connections(limit: 100) { data { ${CONNECTION} } } }`, { id });
    const updated = await h.graphql(ws.apiKey, `mutation($id: ID!) { updateConnection(id: $id, input: { name: "Secretive 2" }) { ${CONNECTION} } }`, { id });
    for (const r of [created, read, updated]) {
      expect(r.body.errors).toBeUndefined();
      const text = JSON.stringify(r.body);
      for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    }
  });
});

describe("schemas", () => {
  const definition = {
    type: "object",
    properties: { sku: { type: "string" }, qty: { type: "integer", minimum: 0 } },
    required: ["sku"],
  };
  let schemaId = "";

  test("createSchema answers what REST reads back; isActive is always there", async () => {
    const { createSchema: s } = await gql(`mutation($input: CreateSchemaInput!) { createSchema(input: $input) { ${SCHEMA} } }`, {
      input: { name: "Order Line", description: "one order line", definition },
    });
    schemaId = s.id;
    expect(s.id).toMatch(/^sch/);
    expect(s.definition).toEqual(definition);
    expect(s.isActive).toBe(true);
    expectSameObject(s, await rest("GET", `/schemas/${s.id}`));
  });

  test("schema(id) and schemas read what REST created, with the same pagination", async () => {
    const made = await rest("POST", "/schemas", { name: "Invoice", definition: { type: "object", properties: { no: { type: "string" } } } });
    const { schema } = await gql(`query($id: ID!) { schema(id: $id) { ${SCHEMA} } }`, { id: made.id });
    expectSameObject(schema, made);
    expect(schema.description).toBeNull();

    const { schemas } = await gql(`{ schemas(limit: 1) { data { ${SCHEMA} } ${PAGINATION} } }`);
    const restPage = await rest("GET", "/schemas?limit=1");
    expect(schemas.pagination).toEqual(restPage.pagination);
    expect(schemas.pagination).toEqual({ page: 1, limit: 1, total: 2, totalPages: 2 });
    expectSameObject(schemas.data, restPage.data);
    const { schemas: named } = await gql(`{ schemas(name: "order") { data { id } } }`);
    expect(named.data).toEqual([{ id: schemaId }]);
  });

  test("updateSchema changes what REST reads; description null clears it", async () => {
    const next = { ...definition, properties: { ...definition.properties, note: { type: "string" } } };
    const { updateSchema: u } = await gql(
      `mutation($id: ID!, $input: UpdateSchemaInput!) { updateSchema(id: $id, input: $input) { ${SCHEMA} } }`,
      { id: schemaId, input: { definition: next, description: null } },
    );
    expect(u.name).toBe("Order Line");
    expect(u.definition).toEqual(next);
    expect(u.description).toBeNull();
    const fromRest = await rest("GET", `/schemas/${schemaId}`);
    expect(fromRest).not.toHaveProperty("description");
    expectSameObject(u, fromRest);
  });

  test("deleteSchema removes it for REST too", async () => {
    const { createSchema: s } = await gql(
      `mutation { createSchema(input: { name: "Temp", definition: { type: "object", properties: {} } }) { id } }`,
    );
    const { deleteSchema } = await gql(`mutation($id: ID!) { deleteSchema(id: $id) { id deleted } }`, { id: s.id });
    expect(deleteSchema).toEqual({ id: s.id, deleted: true });
    expect((await h.api(ws, "GET", `/schemas/${s.id}`)).status).toBe(404);
  });
});

describe("webhooks and pipelines", () => {
  let w2: TestWorkspace;
  let connectionId = "";
  let emailConnectionId = "";
  let schemaId = "";
  let webhookId = "";
  let pipelineId = "";

  beforeAll(async () => {
    w2 = await h.workspace({ name: "Pipelines Co" });
    connectionId = (await rest("POST", "/connections", { name: "Warehouse North", sftpPassword: "x" }, w2)).id;
    emailConnectionId = (await rest("POST", "/connections", { name: "Mailbox", type: "EMAIL", emailAllowedFormats: ["csv"] }, w2)).id;
    schemaId = (await rest("POST", "/schemas", { name: "Row", definition: { type: "object", properties: { a: { type: "string" } } } }, w2)).id;
  });

  test("createWebhook shows its whsec_ secret once; webhook(id) and REST do not carry it", async () => {
    const { createWebhook: c } = await gql(
      `mutation { createWebhook(input: { name: "Ops Hook", url: "https://hooks.example.com/in" }) { ${WEBHOOK} secret } }`,
      undefined,
      w2,
    );
    webhookId = c.id;
    expect(c.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(c.isActive).toBe(true);
    const { secret, ...withoutSecret } = c;
    const fromRest = await rest("GET", `/webhooks/${c.id}`, undefined, w2);
    expect(fromRest).toEqual(withoutSecret);
    expect(JSON.stringify(fromRest)).not.toContain(secret);
    const { __type } = await gql(`{ __type(name: "Webhook") { fields { name } } }`, undefined, w2);
    expect(__type.fields.map((f: Any) => f.name)).not.toContain("secret");
    const { webhook } = await gql(`query($id: ID!) { webhook(id: $id) { ${WEBHOOK} } }`, { id: c.id }, w2);
    expect(webhook).toEqual(withoutSecret);
  });

  test("webhooks lists and updateWebhook changes what REST reads", async () => {
    await rest("POST", "/webhooks", { name: "Second Hook", url: "https://hooks.example.com/2", isActive: false }, w2);
    const { webhooks } = await gql(`{ webhooks { data { ${WEBHOOK} } ${PAGINATION} } }`, undefined, w2);
    const restList = await rest("GET", "/webhooks", undefined, w2);
    expect(webhooks).toEqual(restList);
    expect(webhooks.pagination).toEqual({ page: 1, limit: 20, total: 2, totalPages: 1 });

    const { updateWebhook: u } = await gql(
      `mutation($id: ID!) { updateWebhook(id: $id, input: { url: "https://hooks.example.com/moved", isActive: false }) { ${WEBHOOK} } }`,
      { id: webhookId },
      w2,
    );
    expect(u).toMatchObject({ name: "Ops Hook", url: "https://hooks.example.com/moved", isActive: false });
    expect(u).toEqual(await rest("GET", `/webhooks/${webhookId}`, undefined, w2));
  });

  test("createPipeline keeps mappings, defaults and linked webhooks as REST shows them", async () => {
    const mappings = {
      fieldMappings: [
        { source: "Item No", target: "sku", transform: "trim" },
        { value: "EUR", target: "currency" },
      ],
      options: { format: "csv", delimiter: ";", custom: { keep: true } },
      validations: { onInvalidRow: "skip", maxInvalidRows: 10 },
    };
    const { createPipeline: p } = await gql(
      `mutation($input: CreatePipelineInput!) { createPipeline(input: $input) { ${PIPELINE} } }`,
      { input: { name: "Orders In", clientId: connectionId, schemaId, mappings, webhookIds: [webhookId] } },
      w2,
    );
    pipelineId = p.id;
    expect(p).toMatchObject({ direction: "inbound", isActive: true, clientId: connectionId, schemaId });
    expect(withoutNulls(p.mappings)).toEqual(mappings);
    expect(p.webhooks).toEqual([{ id: webhookId, name: "Ops Hook", url: "https://hooks.example.com/moved" }]);
    expectSameObject(p, await rest("GET", `/pipelines/${p.id}`, undefined, w2));
  });

  test("pipeline(id) and pipelines read what REST created; filters match REST's", async () => {
    const other = await rest(
      "POST",
      "/pipelines",
      { name: "Mail In", clientId: emailConnectionId, schemaId, isActive: false, mappings: { fieldMappings: [{ source: "a", target: "a" }] } },
      w2,
    );
    const { pipeline } = await gql(`query($id: ID!) { pipeline(id: $id) { ${PIPELINE} } }`, { id: other.id }, w2);
    expectSameObject(pipeline, other);
    expect(pipeline.webhooks).toBeNull();

    const { pipelines: all } = await gql(`{ pipelines { data { ${PIPELINE} } ${PAGINATION} } }`, undefined, w2);
    expect(all.pagination).toEqual({ page: 1, limit: 20, total: 2, totalPages: 1 });
    expectSameObject(all.data, await rest("GET", "/pipelines", undefined, w2));

    const ids = async (args: string) => (await gql(`{ pipelines(${args}) { data { id } } }`, undefined, w2)).pipelines.data.map((p: Any) => p.id);
    expect(await ids('connectionName: "NORTH"')).toEqual([pipelineId]);
    expect(await ids(`clientId: "${emailConnectionId}"`)).toEqual([other.id]);
    expect(await ids("isActive: false")).toEqual([other.id]);
    expect(await ids('direction: outbound')).toEqual([]);
    const restFiltered = await rest("GET", "/pipelines?connectionName=north", undefined, w2);
    expect(restFiltered.map((p: Any) => p.id)).toEqual([pipelineId]);
  });

  test("updatePipeline replaces webhooks and mappings; REST reads the change", async () => {
    const { updatePipeline: u } = await gql(
      `mutation($id: ID!, $input: UpdatePipelineInput!) { updatePipeline(id: $id, input: $input) { ${PIPELINE} } }`,
      { id: pipelineId, input: { webhookIds: [], direction: "outbound", mappings: { fieldMappings: [{ source: "x", target: "y", transform: "uppercase" }] } } },
      w2,
    );
    expect(u.webhooks).toBeNull();
    expect(u.direction).toBe("outbound");
    expect(withoutNulls(u.mappings.fieldMappings)).toEqual([{ source: "x", target: "y", transform: "uppercase" }]);
    const fromRest = await rest("GET", `/pipelines/${pipelineId}`, undefined, w2);
    expect(fromRest).not.toHaveProperty("webhooks");
    expectSameObject(u, fromRest);
  });

  test("deleteWebhook unlinks it from pipelines; deletePipeline and deleteConnection then succeed", async () => {
    await gql(`mutation($id: ID!, $wh: String!) { updatePipeline(id: $id, input: { webhookIds: [$wh] }) { id } }`, { id: pipelineId, wh: webhookId }, w2);
    const { deleteWebhook } = await gql(`mutation($id: ID!) { deleteWebhook(id: $id) { id deleted } }`, { id: webhookId }, w2);
    expect(deleteWebhook).toEqual({ id: webhookId, deleted: true });
    expect((await h.api(w2, "GET", `/webhooks/${webhookId}`)).status).toBe(404);
    expect((await rest("GET", `/pipelines/${pipelineId}`, undefined, w2)).webhooks).toBeUndefined();

    const { deletePipeline } = await gql(`mutation($id: ID!) { deletePipeline(id: $id) { id deleted } }`, { id: pipelineId }, w2);
    expect(deletePipeline).toEqual({ id: pipelineId, deleted: true });
    expect((await h.api(w2, "GET", `/pipelines/${pipelineId}`)).status).toBe(404);
    const { deleteConnection } = await gql(`mutation($id: ID!) { deleteConnection(id: $id) { deleted } }`, { id: connectionId }, w2);
    expect(deleteConnection.deleted).toBe(true);
  });
});
