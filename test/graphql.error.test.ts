import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRANSFORMS } from "../src/services/pipelines/shapes";
import { Harness, type TestWorkspace } from "./helpers/harness";

/**
 * GraphQL refuses what REST refuses, with REST's message, and says how in
 * `extensions`: `code` (GraphQL's name), `error` and `statusCode` (REST's).
 */

let h: Harness;
let ws: TestWorkspace;
const ids = { hosted: "", email: "", schema: "", otherSchema: "", webhook: "", pipeline: "" };

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  const made = async (path: string, body: unknown) => {
    const r = await h.api(ws, "POST", path, body);
    expect(r.status).toBe(200);
    return r.body.id as string;
  };
  ids.hosted = await made("/connections", { name: "Taken" });
  ids.email = await made("/connections", { name: "Inbox", type: "EMAIL", emailAllowedFormats: ["csv"] });
  ids.schema = await made("/schemas", { name: "Taken Schema", definition: { type: "object", properties: { a: { type: "string" } } } });
  ids.otherSchema = await made("/schemas", { name: "Other Schema", definition: { type: "object", properties: {} } });
  ids.webhook = await made("/webhooks", { name: "Hook", url: "https://hooks.example.com/x" });
  ids.pipeline = await made("/pipelines", { name: "Taken Pipeline", clientId: ids.hosted, schemaId: ids.schema });
});

afterAll(async () => {
  await h.close();
});

interface Case {
  title: string;
  /** GraphQL operation whose one root field fails. */
  query: string;
  variables: () => Record<string, unknown>;
  /** The same request over REST. */
  rest: () => [method: string, path: string, body?: unknown];
  code: "BAD_USER_INPUT" | "NOT_FOUND" | "CONFLICT" | "FEATURE_NOT_ENABLED";
  status: 400 | 404 | 409;
  /** A part of the message that shows the right rule refused it. */
  says: string;
}

const create = (field: string, type: string) => `mutation($input: ${type}!) { ${field}(input: $input) { __typename } }`;
const update = (field: string, type: string) => `mutation($id: ID!, $input: ${type}!) { ${field}(id: $id, input: $input) { __typename } }`;
const byId = (kind: "query" | "mutation", field: string) => `${kind}($id: ID!) { ${field}(id: $id) { __typename } }`;
const bad = { code: "BAD_USER_INPUT", status: 400 } as const;
const missing = { code: "NOT_FOUND", status: 404 } as const;
const conflict = { code: "CONFLICT", status: 409 } as const;

const pipeline = (extra: Record<string, unknown>) => ({ name: "P", clientId: ids.hosted, schemaId: ids.schema, ...extra });
const mapped = (...fieldMappings: Record<string, unknown>[]) => pipeline({ mappings: { fieldMappings } });

const cases: Case[] = [
  // connections
  {
    title: "blank connection name",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "   " } }),
    rest: () => ["POST", "/connections", { name: "   " }],
    ...bad,
    says: "name: must not be empty",
  },
  {
    title: "over-long connection name",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "n".repeat(201) } }),
    rest: () => ["POST", "/connections", { name: "n".repeat(201) }],
    ...bad,
    says: "name: must be at most 200 characters",
  },
  {
    title: "EMAIL connection without formats",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "Mail", type: "EMAIL" } }),
    rest: () => ["POST", "/connections", { name: "Mail", type: "EMAIL" }],
    ...bad,
    says: "emailAllowedFormats: is required",
  },
  {
    title: "EMAIL connection with an unknown format",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "Mail", type: "EMAIL", emailAllowedFormats: ["pdf"] } }),
    rest: () => ["POST", "/connections", { name: "Mail", type: "EMAIL", emailAllowedFormats: ["pdf"] }],
    ...bad,
    says: "emailAllowedFormats[0]: unknown format 'pdf'",
  },
  {
    title: "EMAIL connection with an SFTP credential",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "Mail", type: "EMAIL", emailAllowedFormats: ["csv"], sftpPassword: "x" } }),
    rest: () => ["POST", "/connections", { name: "Mail", type: "EMAIL", emailAllowedFormats: ["csv"], sftpPassword: "x" }],
    ...bad,
    says: "sftpPassword: only applies to SFTP connections",
  },
  {
    title: "IP allow-list entry that is not an address",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", ipWhitelist: ["10.0.0.1", "999.1.1.1"] } }),
    rest: () => ["POST", "/connections", { name: "C", ipWhitelist: ["10.0.0.1", "999.1.1.1"] }],
    ...bad,
    says: "ipWhitelist[1]: must be an IP address or CIDR range",
  },
  {
    title: "empty password (null removes one)",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", sftpPassword: "" } }),
    rest: () => ["POST", "/connections", { name: "C", sftpPassword: "" }],
    ...bad,
    says: "sftpPassword: must not be empty; send null to remove it",
  },
  {
    title: "self-hosted connection without a server",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", useHostedSFTP: false } }),
    rest: () => ["POST", "/connections", { name: "C", useHostedSFTP: false }],
    ...bad,
    says: "sftpServer: is required for a self-hosted connection",
  },
  {
    title: "server host written as a URL",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", useHostedSFTP: false, sftpServer: { host: "sftp://files.example.com" } } }),
    rest: () => ["POST", "/connections", { name: "C", useHostedSFTP: false, sftpServer: { host: "sftp://files.example.com" } }],
    ...bad,
    says: "sftpServer.host: must be a host name or IP address",
  },
  {
    title: "server folder escaping its root",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", sftpServer: { host: "files.example.com", inboundFolder: "../etc" } } }),
    rest: () => ["POST", "/connections", { name: "C", sftpServer: { host: "files.example.com", inboundFolder: "../etc" } }],
    ...bad,
    says: "sftpServer.inboundFolder: must not contain '..'",
  },
  {
    title: "hosted connection given its own server",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", useHostedSFTP: true, sftpServer: { host: "files.example.com" } } }),
    rest: () => ["POST", "/connections", { name: "C", useHostedSFTP: true, sftpServer: { host: "files.example.com" } }],
    ...bad,
    says: "sftpServer: a hosted connection uses the service's own SFTP server",
  },
  {
    title: "hosted username with forbidden characters",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "C", sftpUsername: "Bad Name!" } }),
    rest: () => ["POST", "/connections", { name: "C", sftpUsername: "Bad Name!" }],
    ...bad,
    says: "sftpUsername: a hosted SFTP username is 3-64 characters",
  },
  {
    title: "duplicate connection name",
    query: create("createConnection", "CreateConnectionInput"),
    variables: () => ({ input: { name: "Taken" } }),
    rest: () => ["POST", "/connections", { name: "Taken" }],
    ...conflict,
    says: "name: a connection named 'Taken' already exists",
  },
  {
    title: "changing a connection's type",
    query: update("updateConnection", "UpdateConnectionInput"),
    variables: () => ({ id: ids.hosted, input: { name: "Taken", type: "EMAIL" } }),
    rest: () => ["PATCH", `/connections/${ids.hosted}`, { name: "Taken", type: "EMAIL" }],
    ...bad,
    says: "type: cannot change from SFTP to EMAIL",
  },
  {
    title: "renaming a connection to a taken name",
    query: update("updateConnection", "UpdateConnectionInput"),
    variables: () => ({ id: ids.email, input: { name: "Taken" } }),
    rest: () => ["PATCH", `/connections/${ids.email}`, { name: "Taken" }],
    ...conflict,
    says: "name: a connection named 'Taken' already exists",
  },
  {
    title: "binding a connection to an unknown server",
    query: update("updateConnection", "UpdateConnectionInput"),
    variables: () => ({ id: ids.hosted, input: { name: "Taken", useHostedSFTP: false, sftpServerDataId: "srv_nope" } }),
    rest: () => ["PATCH", `/connections/${ids.hosted}`, { name: "Taken", useHostedSFTP: false, sftpServerDataId: "srv_nope" }],
    ...missing,
    says: "sftpServerDataId: SFTP server 'srv_nope' not found",
  },
  {
    title: "updating an unknown connection",
    query: update("updateConnection", "UpdateConnectionInput"),
    variables: () => ({ id: "conn_nope", input: { name: "X" } }),
    rest: () => ["PATCH", "/connections/conn_nope", { name: "X" }],
    ...missing,
    says: "connection 'conn_nope' not found",
  },
  {
    title: "reading an unknown connection",
    query: byId("query", "connection"),
    variables: () => ({ id: "conn_nope" }),
    rest: () => ["GET", "/connections/conn_nope"],
    ...missing,
    says: "connection 'conn_nope' not found",
  },
  {
    title: "testing an unknown connection",
    query: byId("mutation", "testConnection"),
    variables: () => ({ id: "conn_nope" }),
    rest: () => ["POST", "/connections/conn_nope/test-connection"],
    ...missing,
    says: "connection 'conn_nope' not found",
  },
  {
    title: "deleting a connection pipelines use",
    query: byId("mutation", "deleteConnection"),
    variables: () => ({ id: ids.hosted }),
    rest: () => ["DELETE", `/connections/${ids.hosted}`],
    ...conflict,
    says: "is used by pipelines 'Taken Pipeline'",
  },
  {
    title: "page size above the maximum",
    query: "{ connections(limit: 101) { __typename } }",
    variables: () => ({}),
    rest: () => ["GET", "/connections?limit=101"],
    ...bad,
    says: "limit: must be at most 100",
  },
  {
    title: "page 0",
    query: "{ connections(page: 0) { __typename } }",
    variables: () => ({}),
    rest: () => ["GET", "/connections?page=0"],
    ...bad,
    says: "page: must be at least 1",
  },
  // schemas
  {
    title: "definition that is not an object",
    query: create("createSchema", "CreateSchemaInput"),
    variables: () => ({ input: { name: "S", definition: "a string" } }),
    rest: () => ["POST", "/schemas", { name: "S", definition: "a string" }],
    ...bad,
    says: "definition: must be a JSON Schema object",
  },
  {
    title: "definition that breaks the meta-schema",
    query: create("createSchema", "CreateSchemaInput"),
    variables: () => ({ input: { name: "S", definition: { type: "object", properties: { a: { type: "strin" } } } } }),
    rest: () => ["POST", "/schemas", { name: "S", definition: { type: "object", properties: { a: { type: "strin" } } } }],
    ...bad,
    says: "definition.properties.a.type",
  },
  {
    title: "definition of something other than a row",
    query: create("createSchema", "CreateSchemaInput"),
    variables: () => ({ input: { name: "S", definition: { type: "array", items: {} } } }),
    rest: () => ["POST", "/schemas", { name: "S", definition: { type: "array", items: {} } }],
    ...bad,
    says: "definition.type: must be 'object'",
  },
  {
    title: "required column that is not a property",
    query: create("createSchema", "CreateSchemaInput"),
    variables: () => ({ input: { name: "S", definition: { type: "object", properties: {}, required: ["ghost"] } } }),
    rest: () => ["POST", "/schemas", { name: "S", definition: { type: "object", properties: {}, required: ["ghost"] } }],
    ...bad,
    says: "definition.required[0]: 'ghost' is not one of definition.properties",
  },
  {
    title: "duplicate schema name",
    query: create("createSchema", "CreateSchemaInput"),
    variables: () => ({ input: { name: "Taken Schema", definition: { type: "object", properties: {} } } }),
    rest: () => ["POST", "/schemas", { name: "Taken Schema", definition: { type: "object", properties: {} } }],
    ...conflict,
    says: "name: a schema named 'Taken Schema' already exists",
  },
  {
    title: "renaming a schema to a taken name",
    query: update("updateSchema", "UpdateSchemaInput"),
    variables: () => ({ id: ids.otherSchema, input: { name: "Taken Schema" } }),
    rest: () => ["PATCH", `/schemas/${ids.otherSchema}`, { name: "Taken Schema" }],
    ...conflict,
    says: "name: a schema named 'Taken Schema' already exists",
  },
  {
    title: "deleting a schema pipelines use",
    query: byId("mutation", "deleteSchema"),
    variables: () => ({ id: ids.schema }),
    rest: () => ["DELETE", `/schemas/${ids.schema}`],
    ...conflict,
    says: "is used by pipelines 'Taken Pipeline'",
  },
  {
    title: "reading an unknown schema",
    query: byId("query", "schema"),
    variables: () => ({ id: "sch_nope" }),
    rest: () => ["GET", "/schemas/sch_nope"],
    ...missing,
    says: "schema 'sch_nope' not found",
  },
  // pipelines
  {
    title: "aggregated mapping while the workspace gate is off",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: mapped({ sources: ["first", "last"], delimiter: " ", target: "name" }) }),
    rest: () => ["POST", "/pipelines", mapped({ sources: ["first", "last"], delimiter: " ", target: "name" })],
    code: "FEATURE_NOT_ENABLED",
    status: 400,
    says: "mappings.fieldMappings[0].sources: aggregated mappings are not enabled for this workspace",
  },
  {
    title: "mapping with both source and value",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: mapped({ source: "a", value: "b", target: "c" }) }),
    rest: () => ["POST", "/pipelines", mapped({ source: "a", value: "b", target: "c" })],
    ...bad,
    says: "mappings.fieldMappings[0].value: cannot be combined with source",
  },
  {
    title: "two mappings with one target",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: mapped({ source: "a", target: "t" }, { value: "v", target: "t" }) }),
    rest: () => ["POST", "/pipelines", mapped({ source: "a", target: "t" }, { value: "v", target: "t" })],
    ...bad,
    says: "mappings.fieldMappings[1].target: 't' is already the target of fieldMappings[0]",
  },
  {
    title: "parse option outside its enum",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: pipeline({ mappings: { options: { encoding: "ebcdic" } } }) }),
    rest: () => ["POST", "/pipelines", pipeline({ mappings: { options: { encoding: "ebcdic" } } })],
    ...bad,
    says: "mappings.options.encoding",
  },
  {
    title: "outbound pipeline over an EMAIL connection",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: pipeline({ clientId: ids.email, direction: "outbound" }) }),
    rest: () => ["POST", "/pipelines", pipeline({ clientId: ids.email, direction: "outbound" })],
    ...bad,
    says: "direction: outbound pipelines deliver over SFTP",
  },
  {
    title: "pipeline naming an unknown connection",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: pipeline({ clientId: "conn_nope" }) }),
    rest: () => ["POST", "/pipelines", pipeline({ clientId: "conn_nope" })],
    ...missing,
    says: "clientId: connection 'conn_nope' not found",
  },
  {
    title: "pipeline naming an unknown schema",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: pipeline({ schemaId: "sch_nope" }) }),
    rest: () => ["POST", "/pipelines", pipeline({ schemaId: "sch_nope" })],
    ...missing,
    says: "schemaId: schema 'sch_nope' not found",
  },
  {
    title: "pipeline linking an unknown webhook",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: pipeline({ webhookIds: [ids.webhook, "wh_nope"] }) }),
    rest: () => ["POST", "/pipelines", pipeline({ webhookIds: [ids.webhook, "wh_nope"] })],
    ...missing,
    says: "webhookIds[1]: webhook 'wh_nope' not found",
  },
  {
    title: "duplicate pipeline name",
    query: create("createPipeline", "CreatePipelineInput"),
    variables: () => ({ input: pipeline({ name: "Taken Pipeline" }) }),
    rest: () => ["POST", "/pipelines", pipeline({ name: "Taken Pipeline" })],
    ...conflict,
    says: "name: a pipeline named 'Taken Pipeline' already exists",
  },
  {
    title: "pointing a pipeline at an unknown schema",
    query: update("updatePipeline", "UpdatePipelineInput"),
    variables: () => ({ id: ids.pipeline, input: { schemaId: "sch_nope" } }),
    rest: () => ["PATCH", `/pipelines/${ids.pipeline}`, { schemaId: "sch_nope" }],
    ...missing,
    says: "schemaId: schema 'sch_nope' not found",
  },
  {
    title: "deleting an unknown pipeline",
    query: byId("mutation", "deletePipeline"),
    variables: () => ({ id: "pipe_nope" }),
    rest: () => ["DELETE", "/pipelines/pipe_nope"],
    ...missing,
    says: "pipeline 'pipe_nope' not found",
  },
  // webhooks
  {
    title: "webhook URL that is not http(s)",
    query: create("createWebhook", "CreateWebhookInput"),
    variables: () => ({ input: { name: "W", url: "ftp://hooks.example.com" } }),
    rest: () => ["POST", "/webhooks", { name: "W", url: "ftp://hooks.example.com" }],
    ...bad,
    says: "url: must be an absolute http:// or https:// URL",
  },
  {
    title: "blank webhook name on update",
    query: update("updateWebhook", "UpdateWebhookInput"),
    variables: () => ({ id: ids.webhook, input: { name: "" } }),
    rest: () => ["PATCH", `/webhooks/${ids.webhook}`, { name: "" }],
    ...bad,
    says: "name: must not be empty",
  },
  {
    title: "reading an unknown webhook",
    query: byId("query", "webhook"),
    variables: () => ({ id: "wh_nope" }),
    rest: () => ["GET", "/webhooks/wh_nope"],
    ...missing,
    says: "webhook 'wh_nope' not found",
  },
];

/**
 * Enum members are GraphQL enums (ConnectionType, PipelineDirection,
 * Transform): GraphQL's type system refuses an unknown value before any
 * resolver runs, with an error that names the enum and the value, and the
 * allowed values are in the schema for any client to read. REST refuses the
 * same values with its own message.
 */
describe("enum values outside the enum", () => {
  const enumCases: [string, string, Record<string, unknown>, string, [string, string, unknown?], string][] = [
    ["connection type", create("createConnection", "CreateConnectionInput"), { input: { name: "C", type: "FTP" } }, "ConnectionType", ["POST", "/connections", { name: "C", type: "FTP" }], "type: must be one of SFTP, EMAIL"],
    ["type filter", 'query($t: ConnectionType) { connections(type: $t) { __typename } }', { t: "FTP" }, "ConnectionType", ["GET", "/connections?type=FTP"], "type: must be one of SFTP, EMAIL"],
    [
      "transform",
      create("createPipeline", "CreatePipelineInput"),
      { input: { name: "E1", clientId: "conn_x", schemaId: "sch_x", mappings: { fieldMappings: [{ source: "a", target: "b", transform: "reverse" }] } } },
      "Transform",
      ["POST", "/pipelines", { name: "E1", clientId: "conn_x", schemaId: "sch_x", mappings: { fieldMappings: [{ source: "a", target: "b", transform: "reverse" }] } }],
      `mappings.fieldMappings[0].transform: unknown transform 'reverse'; allowed: ${TRANSFORMS.join(", ")}`,
    ],
    ["direction filter", 'query($d: PipelineDirection) { pipelines(direction: $d) { __typename } }', { d: "sideways" }, "PipelineDirection", ["GET", "/pipelines?direction=sideways"], "direction: must be one of inbound, outbound"],
  ];
  for (const [what, query, variables, enumName, [method, path, body], says] of enumCases) {
    test(`${what}: GraphQL refuses it by type, naming ${enumName} and the value; REST names the allowed values`, async () => {
      const r = await h.api(ws, method, path, body);
      expect(r.status).toBe(400);
      expect(r.body.message).toContain(says);
      const g = await h.graphql(ws.apiKey, query, variables);
      expect(g.status).toBe(400);
      expect(g.body.data).toBeUndefined();
      expect(g.body.errors?.[0]?.message).toContain(enumName);
      expect(g.body.errors?.[0]?.extensions.code).toBe("BAD_USER_INPUT");
    });
  }

  test("the allowed values are readable from the schema", async () => {
    const g = await h.graphql(ws.apiKey, '{ t: __type(name: "Transform") { enumValues { name } } d: __type(name: "PipelineDirection") { enumValues { name } } }');
    expect(g.body.data.t.enumValues.map((v: { name: string }) => v.name).sort()).toEqual([...TRANSFORMS].sort());
    expect(g.body.data.d.enumValues.map((v: { name: string }) => v.name).sort()).toEqual(["inbound", "outbound"]);
  });
});

describe("the same refusal as REST", () => {
  test.each(cases.map((c) => [c.title, c] as const))("%s", async (_title, c) => {
    const [method, path, body] = c.rest();
    const r = await h.api(ws, method, path, body);
    expect(r.status).toBe(c.status);
    expect(r.body.message).toContain(c.says);

    const g = await h.graphql(ws.apiKey, c.query, c.variables());
    expect(g.status).toBe(200);
    // Root fields are nullable: the refused field is null, the response is not.
    expect(Object.values(g.body.data ?? { missing: "data" })).toEqual([null]);
    expect(g.body.errors).toHaveLength(1);
    const [e] = g.body.errors ?? [];
    expect(e?.message).toBe(r.body.message);
    expect(e?.extensions).toEqual({ code: c.code, error: r.body.error, statusCode: r.status , requestId: expect.any(String) });
  });

  test("nothing was written by the refused requests", async () => {
    const { body } = await h.graphql(ws.apiKey, "{ connections { data { name } } schemas { data { name } } pipelines { data { name } } webhooks { data { name } } }");
    expect(body.errors).toBeUndefined();
    const names = (k: string) => (body.data[k].data as { name: string }[]).map((x) => x.name).sort();
    expect(names("connections")).toEqual(["Inbox", "Taken"]);
    expect(names("schemas")).toEqual(["Other Schema", "Taken Schema"]);
    expect(names("pipelines")).toEqual(["Taken Pipeline"]);
    expect(names("webhooks")).toEqual(["Hook"]);
  });
});

describe("gates and partial results", () => {
  test("the aggregated mapping refused above is accepted once the workspace gate is on", async () => {
    const gated = await h.workspace({ name: "Gated", features: ["aggregated-mappings"] });
    const conn = await h.api(gated, "POST", "/connections", { name: "C" });
    const schema = await h.api(gated, "POST", "/schemas", { name: "S", definition: { type: "object", properties: {} } });
    const r = await h.graphql(
      gated.apiKey,
      "mutation($input: CreatePipelineInput!) { createPipeline(input: $input) { mappings { fieldMappings { sources delimiter target } } } }",
      { input: { name: "P", clientId: conn.body.id, schemaId: schema.body.id, mappings: { fieldMappings: [{ sources: ["first", "last"], delimiter: " ", target: "name" }] } } },
    );
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data?.createPipeline.mappings.fieldMappings).toEqual([{ sources: ["first", "last"], delimiter: " ", target: "name" }]);
  });

  test("a refused mutation names its path; the mutations before it in the operation still ran", async () => {
    const g = await h.graphql(ws.apiKey, `mutation { ok: createWebhook(input: { name: "Fine", url: "https://ok.example.com" }) { name } ko: deleteSchema(id: "sch_nope") { id } }`);
    expect(g.body.errors).toHaveLength(1);
    expect(g.body.errors?.[0]?.extensions.code).toBe("NOT_FOUND");
    expect((g.body.errors?.[0] as { path?: string[] }).path).toEqual(["ko"]);
    // Root fields are nullable: the refused one is null, and the first mutation's result is still there.
    expect(g.body.data).toEqual({ ok: { name: "Fine" }, ko: null });
    const hooks = await h.api(ws, "GET", "/webhooks");
    expect(hooks.body.data.map((w: { name: string }) => w.name)).toContain("Fine");
  });
});

describe("input that does not fit the GraphQL types", () => {
  test("a null for a required member is a 400 BAD_USER_INPUT naming the member", async () => {
    const g = await h.graphql(ws.apiKey, create("createConnection", "CreateConnectionInput"), { input: { name: null } });
    expect(g.status).toBe(400);
    expect(g.body.errors?.[0]?.message).toContain('"input.name"');
    expect(g.body.errors?.[0]?.extensions).toEqual({ code: "BAD_USER_INPUT", error: "invalid_input", statusCode: 400 , requestId: expect.any(String) });
  });

  test("an unknown member is a 400 BAD_USER_INPUT naming it, not an internal error", async () => {
    const g = await h.graphql(ws.apiKey, create("createConnection", "CreateConnectionInput"), { input: { name: "X", password: "p" } });
    expect(g.status).toBe(400);
    expect(g.body.errors?.[0]?.message).toContain('Field "password" is not defined by type "CreateConnectionInput"');
    expect(g.body.errors?.[0]?.extensions.code).toBe("BAD_USER_INPUT");
  });

  test("a wrong scalar type is a 400 BAD_USER_INPUT", async () => {
    const g = await h.graphql(ws.apiKey, "query($l: Int) { connections(limit: $l) { __typename } }", { l: "ten" });
    expect(g.status).toBe(400);
    expect(g.body.errors?.[0]?.message).toContain("Int cannot represent non-integer value");
    expect(g.body.errors?.[0]?.extensions.error).toBe("invalid_input");
  });

  test("a missing required argument or an unknown field fails validation before any resolver", async () => {
    const noName = await h.graphql(ws.apiKey, 'mutation { createConnection(input: { type: "SFTP" }) { id } }');
    expect(noName.body.errors?.[0]?.message).toContain('Field "CreateConnectionInput.name" of required type "String!" was not provided');
    expect(noName.body.errors?.[0]?.extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
    const list = await h.api(ws, "GET", "/connections");
    expect(list.body).toHaveLength(2);
  });

  test("malformed JSON gets REST's message", async () => {
    const r = await h.request("POST", "/graphql", { key: ws.apiKey, rawBody: '{"query": ', headers: { "content-type": "application/json" } });
    const rest = await h.request("POST", "/connections", { key: ws.apiKey, rawBody: '{"query": ', headers: { "content-type": "application/json" } });
    expect(rest.status).toBe(400);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].message).toBe(rest.body.message);
    expect(r.body.errors[0].extensions).toEqual({ code: "BAD_USER_INPUT", error: "invalid_input", statusCode: 400 , requestId: expect.any(String) });
  });

  test("a body over the JSON limit is a 413, as on REST", async () => {
    const query = "mutation($n: String!) { createConnection(input: { name: $n }) { id } }";
    const rawBody = JSON.stringify({ query, variables: { n: "x".repeat(1024 * 1024) } });
    const r = await h.request("POST", "/graphql", { key: ws.apiKey, rawBody, headers: { "content-type": "application/json" } });
    const rest = await h.request("POST", "/connections", { key: ws.apiKey, rawBody, headers: { "content-type": "application/json" } });
    expect(rest.status).toBe(413);
    expect(r.status).toBe(413);
    expect(r.body.errors[0].message).toBe(rest.body.message);
    expect(r.body.errors[0].extensions).toEqual({ code: "PAYLOAD_TOO_LARGE", error: "payload_too_large", statusCode: 413 , requestId: expect.any(String) });
  });

  test("an unknown Service-Version is a 400, as on REST", async () => {
    const r = await h.request("POST", "/graphql", { key: ws.apiKey, version: "2025-01-01", body: { query: "{ connections { __typename } }" } });
    const rest = await h.request("GET", "/connections", { key: ws.apiKey, version: "2025-01-01" });
    expect(rest.status).toBe(400);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].message).toBe(rest.body.message);
    expect(r.body.errors[0].extensions).toEqual({ code: "BAD_REQUEST", error: "unsupported_version", statusCode: 400 , requestId: expect.any(String) });
  });
});
