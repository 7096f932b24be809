import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, type Reply, type TestWorkspace } from "./helpers/harness";

let h: Harness;
let small: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
/** Existing records the failing requests try to collide with or change. */
let hosted: any;
let selfHosted: any;
let email: any;
let otherServerId: string;

beforeAll(async () => {
  [h, small] = await Promise.all([Harness.start(), Harness.start({ env: { MAX_JSON_BODY_BYTES: "1000" } })]);
  ws = await h.workspace({ name: "Acme" });
  other = await h.workspace({ name: "Other" });
  hosted = (await h.api(ws, "POST", "/connections", { name: "Hosted One", sftpUsername: "acme-hosted-one", sftpPassword: "pw" })).body;
  selfHosted = (
    await h.api(ws, "POST", "/connections", {
      name: "Self Hosted One",
      sftpUsername: "bob",
      sftpPassword: "pw",
      sftpServer: { host: "sftp.customer.example", port: 2222, inboundFolder: "/in" },
    })
  ).body;
  email = (await h.api(ws, "POST", "/connections", { name: "Mail One", type: "EMAIL", emailAllowedFormats: ["csv"] })).body;
  const otherConn = await h.api(other, "POST", "/connections", { name: "Theirs", sftpServer: { host: "their.example.com" } });
  otherServerId = otherConn.body.sftpServerDataId;
});

afterAll(async () => {
  await Promise.all([h.close(), small.close()]);
});

/** What a failed request must leave untouched: the list, every connection, and the server records. */
async function snapshot(w: TestWorkspace = ws) {
  const list = await h.api(w, "GET", "/connections?limit=100");
  const each = await Promise.all(list.body.map((c: { id: string }) => h.api(w, "GET", `/connections/${c.id}`)));
  const servers = await h.svc.db.read.select().from(h.svc.db.t.sftpServers);
  return { list: list.body, each: each.map((r) => r.body), servers: servers.sort((a, b) => a.id.localeCompare(b.id)) };
}

function expectError(r: Reply, status: number, field: string) {
  expect(r.status).toBe(status);
  expect(r.headers.get("content-type")).toContain("application/json");
  expect(Object.keys(r.body).sort()).toEqual(["error", "message", "requestId", "statusCode"]);
  expect(r.body.statusCode).toBe(status);
  expect(typeof r.body.error).toBe("string");
  expect(r.body.error.length).toBeGreaterThan(0);
  expect(typeof r.body.message).toBe("string");
  expect(r.body.message).toContain(`${field}:`);
}

const LONG = "x".repeat(201);
const server = (over: Record<string, unknown>) => ({ name: "Bad Server", sftpServer: { host: "ok.example.com", ...over } });

/** [what, body, field the message must name] — every one is a 400 on create. */
const CREATE_400: [string, unknown, string][] = [
  ["missing name", { type: "SFTP" }, "name"],
  ["empty name", { name: "" }, "name"],
  ["blank name", { name: "   " }, "name"],
  ["name over 200 characters", { name: LONG }, "name"],
  ["name with a control character", { name: "line\nbreak" }, "name"],
  ["name of the wrong type", { name: 42 }, "name"],
  ["body that is not an object", ["name"], "body"],
  ["unknown type", { name: "T", type: "FTP" }, "type"],
  ["type of the wrong type", { name: "T", type: 1 }, "type"],
  ["useHostedSFTP not a boolean", { name: "T", useHostedSFTP: "yes" }, "useHostedSFTP"],
  ["ipWhitelist not an array", { name: "T", ipWhitelist: "10.0.0.1" }, "ipWhitelist"],
  ["ipWhitelist entry not an address", { name: "T", ipWhitelist: ["10.0.0.1", "10.0.0.300"] }, "ipWhitelist[1]"],
  ["ipWhitelist entry a host name", { name: "T", ipWhitelist: ["example.com"] }, "ipWhitelist[0]"],
  ["EMAIL without emailAllowedFormats", { name: "T", type: "EMAIL" }, "emailAllowedFormats"],
  ["EMAIL with empty emailAllowedFormats", { name: "T", type: "EMAIL", emailAllowedFormats: [] }, "emailAllowedFormats"],
  ["EMAIL with an unknown format", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv", "pdf"] }, "emailAllowedFormats[1]"],
  ["EMAIL with formats as a string", { name: "T", type: "EMAIL", emailAllowedFormats: "csv" }, "emailAllowedFormats"],
  ["EMAIL with a bad sender", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], emailAllowedSenders: ["not an address"] }, "emailAllowedSenders[0]"],
  ["EMAIL with sftpPassword", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], sftpPassword: "pw" }, "sftpPassword"],
  ["EMAIL with sftpUsername", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], sftpUsername: "u123" }, "sftpUsername"],
  ["EMAIL with sftpServer", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], sftpServer: { host: "a.example.com" } }, "sftpServer"],
  ["EMAIL with sftpServerDataId", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], sftpServerDataId: "srv_hosted" }, "sftpServerDataId"],
  ["EMAIL with useHostedSFTP", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], useHostedSFTP: true }, "useHostedSFTP"],
  ["EMAIL with awsPublicKey", { name: "T", type: "EMAIL", emailAllowedFormats: ["csv"], awsPublicKey: "ssh-ed25519 AAAA" }, "awsPublicKey"],
  ["SFTP with emailAllowedFormats", { name: "T", emailAllowedFormats: ["csv"] }, "emailAllowedFormats"],
  ["SFTP with emailAllowedSenders", { name: "T", type: "SFTP", emailAllowedSenders: ["a@b.com"] }, "emailAllowedSenders"],
  ["SFTP with emailSubjectFilter", { name: "T", type: "SFTP", emailSubjectFilter: "Invoice" }, "emailSubjectFilter"],
  ["server host with a scheme", server({ host: "sftp://a.example.com" }), "sftpServer.host"],
  ["server host with a port", server({ host: "a.example.com:22" }), "sftpServer.host"],
  ["empty server host", server({ host: "" }), "sftpServer.host"],
  ["server without host", { name: "T", sftpServer: { port: 22 } }, "sftpServer.host"],
  ["server port 0", server({ port: 0 }), "sftpServer.port"],
  ["server port above 65535", server({ port: 70000 }), "sftpServer.port"],
  ["server port as text", server({ port: "22" }), "sftpServer.port"],
  ["server port not whole", server({ port: 22.5 }), "sftpServer.port"],
  ["'..' in inboundFolder", server({ inboundFolder: "../etc" }), "sftpServer.inboundFolder"],
  ["'..' in outboundFolder", server({ outboundFolder: "out/../../x" }), "sftpServer.outboundFolder"],
  ["'..' in rootDirectory", server({ rootDirectory: "/home/../.." }), "sftpServer.rootDirectory"],
  ["self-hosted without a server", { name: "T", useHostedSFTP: false, sftpUsername: "bob" }, "sftpServer"],
  ["hosted with sftpServer", { name: "T", useHostedSFTP: true, sftpServer: { host: "a.example.com" } }, "sftpServer"],
  ["hosted with a self-hosted server id", { name: "T", useHostedSFTP: true, sftpServerDataId: "srv_abc" }, "sftpServerDataId"],
  ["hosted username too short", { name: "T", sftpUsername: "ab" }, "sftpUsername"],
  ["hosted username with capitals and a space", { name: "T", sftpUsername: "Bob Smith" }, "sftpUsername"],
  ["hosted username starting with '-'", { name: "T", sftpUsername: "-bob" }, "sftpUsername"],
  ["hosted username too long", { name: "T", sftpUsername: "a".repeat(65) }, "sftpUsername"],
  ["awsPublicKey not a key", { name: "T", awsPublicKey: "not a key" }, "awsPublicKey"],
  ["awsPublicKey a private key", { name: "T", awsPublicKey: "-----BEGIN OPENSSH PRIVATE KEY-----" }, "awsPublicKey"],
  ["sftpPrivateKey not a key", { name: "T", sftpPrivateKey: "hunter2" }, "sftpPrivateKey"],
  ["sftpPrivateKey a public key", { name: "T", sftpPrivateKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5" }, "sftpPrivateKey"],
  ["empty sftpPassword", { name: "T", sftpPassword: "" }, "sftpPassword"],
  ["sftpPassword of the wrong type", { name: "T", sftpPassword: 1234 }, "sftpPassword"],
  ["sftpPassword over the limit", { name: "T", sftpPassword: "p".repeat(1025) }, "sftpPassword"],
  ["empty sftpServerDataId", { name: "T", sftpServerDataId: "" }, "sftpServerDataId"],
  ["empty awsUserName", { name: "T", awsUserName: "  " }, "awsUserName"],
  ["a misspelt member", { name: "T", sftpPasword: "pw" }, "sftpPasword"],
  ["a misspelt server member", server({ inboundFoldr: "/in" }), "sftpServer.inboundFoldr"],
];

describe("create: invalid input is a 400 naming the field, and nothing is stored", () => {
  for (const [what, body, field] of CREATE_400) {
    test(what, async () => {
      const before = await snapshot();
      const r = await h.api(ws, "POST", "/connections", body);
      expectError(r, 400, field);
      expect(r.body.error).toBe("invalid_input");
      expect(await snapshot()).toEqual(before);
    });
  }

  test("a misspelt member is named and called unknown, so a mistyped secret is not silently dropped", async () => {
    const r = await h.api(ws, "POST", "/connections", { name: "Typo", sftpPasword: "pw" });
    expect(r.body.message).toBe("sftpPasword: unknown member (check its spelling)");
  });

  test("the unknown-type message lists the allowed types; the unknown-format message lists the formats", async () => {
    const t = await h.api(ws, "POST", "/connections", { name: "T", type: "FTP" });
    expect(t.body.message).toContain("SFTP");
    expect(t.body.message).toContain("EMAIL");
    const f = await h.api(ws, "POST", "/connections", { name: "T", type: "EMAIL", emailAllowedFormats: ["pdf"] });
    expect(f.body.message).toContain("'pdf'");
    expect(f.body.message).toContain("csv");
  });

  test("the same rules apply on the /clients alias", async () => {
    const before = await snapshot();
    const r = await h.api(ws, "POST", "/clients", { name: "T", type: "EMAIL", emailAllowedFormats: [] });
    expectError(r, 400, "emailAllowedFormats");
    expect(await snapshot()).toEqual(before);
  });
});

describe("references: unknown or foreign server ids are a 404", () => {
  test("unknown sftpServerDataId", async () => {
    const before = await snapshot();
    const r = await h.api(ws, "POST", "/connections", { name: "Unknown Server", sftpServerDataId: "srv_doesnotexist" });
    expectError(r, 404, "sftpServerDataId");
    expect(r.body.error).toBe("not_found");
    expect(r.body.message).toContain("srv_doesnotexist");
    expect(await snapshot()).toEqual(before);
  });

  test("another workspace's server id is a 404, and that server is not changed", async () => {
    const before = await snapshot();
    const theirsBefore = await snapshot(other);
    const r = await h.api(ws, "POST", "/connections", {
      name: "Borrowed Server",
      sftpServerDataId: otherServerId,
      sftpServer: { host: "hijack.example.com" },
    });
    expectError(r, 404, "sftpServerDataId");
    expect(await snapshot()).toEqual(before);
    expect(await snapshot(other)).toEqual(theirsBefore);
  });

  test("another workspace's server id on PATCH is a 404", async () => {
    const before = await snapshot();
    const r = await h.api(ws, "PATCH", `/connections/${selfHosted.id}`, { name: selfHosted.name, sftpServerDataId: otherServerId });
    expectError(r, 404, "sftpServerDataId");
    expect(await snapshot()).toEqual(before);
  });
});

describe("conflicts are a 409", () => {
  test("a duplicate name on create (also after trimming, and in any case)", async () => {
    const before = await snapshot();
    for (const name of ["Hosted One", "  Hosted One  ", "HOSTED one"]) {
      const r = await h.api(ws, "POST", "/connections", { name });
      expectError(r, 409, "name");
      expect(r.body.error).toBe("conflict");
      expect(r.body.message).toContain(name.trim());
    }
    const e = await h.api(ws, "POST", "/connections", { name: "Mail One", type: "EMAIL", emailAllowedFormats: ["json"] });
    expectError(e, 409, "name");
    expect(await snapshot()).toEqual(before);
  });

  test("the same name in another workspace is allowed", async () => {
    const r = await h.api(other, "POST", "/connections", { name: "Hosted One" });
    expect(r.status).toBe(200);
    expect(r.body.sftpUsername).not.toBe("acme-hosted-one");
    expect((await h.api(other, "DELETE", `/connections/${r.body.id}`)).status).toBe(200);
  });

  test("renaming onto an existing name; a server change in the same request is rolled back", async () => {
    const before = await snapshot();
    const r = await h.api(ws, "PATCH", `/connections/${selfHosted.id}`, {
      name: "Hosted One",
      sftpServer: { host: "changed.example.com", port: 22 },
    });
    expectError(r, 409, "name");
    expect(await snapshot()).toEqual(before);
    expect((await h.api(ws, "GET", `/connections/${selfHosted.id}`)).body.sftpServer.host).toBe("sftp.customer.example");
  });

  test("a hosted username taken in another workspace", async () => {
    const before = await snapshot(other);
    const r = await h.api(other, "POST", "/connections", { name: "Copycat", sftpUsername: "acme-hosted-one" });
    expectError(r, 409, "sftpUsername");
    expect(r.body.message).toContain("acme-hosted-one");
    expect(await snapshot(other)).toEqual(before);

    const theirs = (await h.api(other, "POST", "/connections", { name: "Copycat Later" })).body;
    const snap = await snapshot(other);
    const p = await h.api(other, "PATCH", `/connections/${theirs.id}`, { name: "Copycat Later", sftpUsername: "acme-hosted-one" });
    expectError(p, 409, "sftpUsername");
    expect(await snapshot(other)).toEqual(snap);
  });

  test("deleting a connection a pipeline uses; it stays and can be deleted once the pipeline is gone", async () => {
    const conn = (await h.api(ws, "POST", "/connections", { name: "In Use" })).body;
    const schema = await h.api(ws, "POST", "/schemas", {
      name: "Orders",
      definition: { type: "object", properties: { id: { type: "string" } } },
    });
    expect(schema.status).toBe(200);
    const pipeline = await h.api(ws, "POST", "/pipelines", { name: "Orders In", clientId: conn.id, schemaId: schema.body.id });
    expect(pipeline.status).toBe(200);

    const before = await snapshot();
    for (const base of ["/connections", "/clients"]) {
      const r = await h.api(ws, "DELETE", `${base}/${conn.id}`);
      expect(r.status).toBe(409);
      expect(Object.keys(r.body).sort()).toEqual(["error", "message", "requestId", "statusCode"]);
      expect(r.body).toMatchObject({ statusCode: 409, error: "conflict" });
      expect(r.body.message).toContain("'Orders In'");
    }
    expect(await snapshot()).toEqual(before);

    expect((await h.api(ws, "DELETE", `/pipelines/${pipeline.body.id}`)).status).toBe(200);
    expect((await h.api(ws, "DELETE", `/connections/${conn.id}`)).status).toBe(200);
    expect((await h.api(ws, "GET", `/connections/${conn.id}`)).status).toBe(404);
  });
});

describe("PATCH rules", () => {
  const PATCH_400: [string, () => string, () => Record<string, unknown>, string][] = [
    ["without name", () => hosted.id, () => ({ sftpPassword: "new" }), "name"],
    ["with an empty name", () => hosted.id, () => ({ name: "" }), "name"],
    ["changing type SFTP -> EMAIL", () => hosted.id, () => ({ name: hosted.name, type: "EMAIL", emailAllowedFormats: ["csv"] }), "type"],
    ["changing type EMAIL -> SFTP", () => email.id, () => ({ name: email.name, type: "SFTP" }), "type"],
    ["an EMAIL connection with no formats left", () => email.id, () => ({ name: email.name, emailAllowedFormats: [] }), "emailAllowedFormats"],
    ["SFTP-only fields on EMAIL", () => email.id, () => ({ name: email.name, sftpPassword: "pw" }), "sftpPassword"],
    ["EMAIL-only fields on SFTP", () => selfHosted.id, () => ({ name: selfHosted.name, emailSubjectFilter: "x" }), "emailSubjectFilter"],
    ["a server on a connection kept hosted", () => hosted.id, () => ({ name: hosted.name, useHostedSFTP: true, sftpServer: { host: "a.example.com" } }), "sftpServer"],
    ["a bad hosted username", () => hosted.id, () => ({ name: hosted.name, sftpUsername: "No Spaces" }), "sftpUsername"],
    ["'..' in a folder", () => selfHosted.id, () => ({ name: selfHosted.name, sftpServer: { host: "a.example.com", inboundFolder: "a/../../b" } }), "sftpServer.inboundFolder"],
    ["a bad ipWhitelist entry", () => selfHosted.id, () => ({ name: selfHosted.name, ipWhitelist: ["300.1.1.1"] }), "ipWhitelist[0]"],
    ["a bad private key", () => selfHosted.id, () => ({ name: selfHosted.name, sftpPrivateKey: "nope" }), "sftpPrivateKey"],
    ["moving to self-hosted without a server", () => hosted.id, () => ({ name: hosted.name, useHostedSFTP: false }), "sftpServer"],
    ["a server on a hosted connection without useHostedSFTP: false", () => hosted.id, () => ({ name: hosted.name, sftpServer: { host: "a.example.com" } }), "sftpServer"],
    ["the hosted server id on a self-hosted connection without useHostedSFTP: true", () => selfHosted.id, () => ({ name: selfHosted.name, sftpServerDataId: "srv_hosted" }), "sftpServerDataId"],
    ["a misspelt member", () => selfHosted.id, () => ({ name: selfHosted.name, emailSubjectFiltr: "x" }), "emailSubjectFiltr"],
  ];
  for (const [what, id, body, field] of PATCH_400) {
    test(`400: ${what}`, async () => {
      const before = await snapshot();
      const r = await h.api(ws, "PATCH", `/connections/${id()}`, body());
      expectError(r, 400, field);
      expect(await snapshot()).toEqual(before);
    });
  }

  test("404: an unknown id, and another workspace's connection on every route", async () => {
    const theirs = (await h.api(other, "GET", "/connections")).body[0];
    const theirsBefore = await snapshot(other);
    for (const id of ["conn_unknown", theirs.id]) {
      for (const [method, path, body] of [
        ["GET", `/connections/${id}`, undefined],
        ["PATCH", `/connections/${id}`, { name: "Stolen" }],
        ["DELETE", `/connections/${id}`, undefined],
        ["POST", `/connections/${id}/test-connection`, undefined],
        ["GET", `/clients/${id}`, undefined],
      ] as const) {
        const r = await h.api(ws, method, path, body);
        expect(r.status).toBe(404);
        expect(r.body).toMatchObject({ statusCode: 404, error: "not_found" });
        expect(r.body.message).toContain(id);
      }
    }
    expect(await snapshot(other)).toEqual(theirsBefore);
  });
});

describe("list query errors", () => {
  const QUERY_400: [string, string][] = [
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=ten", "limit"],
    ["page=0", "page"],
    ["page=1.5", "page"],
    ["type=FTP", "type"],
  ];
  for (const [query, field] of QUERY_400) {
    test(`?${query}`, async () => {
      const r = await h.api(ws, "GET", `/connections?${query}`);
      expectError(r, 400, field);
    });
  }
});

describe("transport errors", () => {
  const send = (target: Harness, key: string, opts: { rawBody: string; headers?: Record<string, string> }) =>
    target.request("POST", "/connections", { key, version: "2026-05-25", rawBody: opts.rawBody, headers: opts.headers });

  test("malformed JSON is a 400 naming the body", async () => {
    const before = await snapshot();
    for (const rawBody of ['{"name": "Broken"', "{name: 'x'}", "nul"]) {
      const r = await send(h, ws.apiKey, { rawBody, headers: { "content-type": "application/json" } });
      expectError(r, 400, "body");
      expect(r.body.error).toBe("invalid_input");
    }
    expect(await snapshot()).toEqual(before);
  });

  test("a body that is not JSON is a 415 naming the content type", async () => {
    const before = await snapshot();
    for (const type of ["application/xml", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"]) {
      const r = await send(h, ws.apiKey, { rawBody: "name=Form", headers: { "content-type": type } });
      expectError(r, 415, "content-type");
      expect(r.body.error).toBe("unsupported_media_type");
    }
    expect(await snapshot()).toEqual(before);
  });

  test("a body over MAX_JSON_BODY_BYTES is a 413; one under it is accepted", async () => {
    const sw = await small.workspace();
    const big = JSON.stringify({ name: "Too Big", emailSubjectFilter: "x".repeat(1200) });
    const r = await send(small, sw.apiKey, { rawBody: big, headers: { "content-type": "application/json" } });
    expectError(r, 413, "body");
    expect(r.body.error).toBe("payload_too_large");
    expect(r.body.message).toContain("1000");

    const patchBig = await small.request("PATCH", "/connections/conn_any", { key: sw.apiKey, version: "2026-05-25", body: { name: "y".repeat(1100) } });
    expect(patchBig.status).toBe(413);

    const list = await small.api(sw, "GET", "/connections");
    expect(list.body).toEqual([]);
    const fits = await small.api(sw, "POST", "/connections", { name: "Fits" });
    expect(fits.status).toBe(200);
  });
});
