import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { Harness, NOW, type TestWorkspace } from "./helpers/harness";

const LATEST = "2026-05-25";
const LEGACY = "2024-09-01";

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});

afterAll(async () => {
  await h.close();
});

const create = (body: Record<string, unknown>, w: TestWorkspace = ws) => h.api(w, "POST", "/connections", body);
const get = (id: string, w: TestWorkspace = ws) => h.api(w, "GET", `/connections/${id}`);
const patch = (id: string, body: Record<string, unknown>) => h.api(ws, "PATCH", `/connections/${id}`, body);

async function created(body: Record<string, unknown>, w: TestWorkspace = ws) {
  const r = await create(body, w);
  expect(r.status).toBe(200);
  return r.body;
}

async function storedRow(id: string) {
  const c = h.svc.db.t.connections;
  const [row] = await h.svc.db.read.select().from(c).where(eq(c.id, id));
  return row;
}

async function storedServer(id: string) {
  const s = h.svc.db.t.sftpServers;
  const [row] = await h.svc.db.read.select().from(s).where(eq(s.id, id));
  return row;
}

/** A local TCP peer that writes `greeting` to every connection and then hangs up. */
function peer(greeting: string) {
  return Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.write(greeting);
        socket.end();
      },
      data() {},
    },
  });
}

/** A port on 127.0.0.1 with nothing listening: bound once, then released. */
function closedPort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

const checkOf = (result: { checks: { name: string; status: string }[] }, name: string) =>
  result.checks.find((c) => c.name === name)?.status;

describe("hosted SFTP connections", () => {
  test("create without a username generates one from the name; the service's own server is bound", async () => {
    const r = await create({ name: "Acme Orders (EU)", type: "SFTP", useHostedSFTP: true, sftpPassword: "s3cret-hosted" });
    expect(r.status).toBe(200);
    expect(r.headers.get("service-version")).toBe(LATEST);
    const c = r.body;
    expect(c.id).toStartWith("conn_");
    expect(c.workspaceId).toBe(ws.workspaceId);
    expect(c.type).toBe("SFTP");
    expect(c.useHostedSFTP).toBe(true);
    expect(c.sftpUsername).toMatch(/^acme-orders-eu-[a-z0-9]{6}$/);
    expect(c.sftpServerDataId).toBe("srv_hosted");
    expect(c.sftpServer).toMatchObject({ id: "srv_hosted", hosted: true, host: "localhost", rootDirectory: "/" });
    expect(c.credentialsSet).toEqual(["sftpPassword"]);
    expect(c).not.toHaveProperty("sftpPassword");
    expect(c).not.toHaveProperty("emailInbox");
    expect(c.ipWhitelist).toEqual([]);
    expect(c.createdAt).toBe(NOW.toISOString());
    expect(c.updatedAt).toBe(NOW.toISOString());

    const again = await get(c.id);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(c);
  });

  test("two connections with the same name slug get different generated usernames", async () => {
    const a = await created({ name: "Slug Twin" });
    await h.api(ws, "DELETE", `/connections/${a.id}`);
    const b = await created({ name: "Slug Twin" });
    expect(a.sftpUsername).toMatch(/^slug-twin-[a-z0-9]{6}$/);
    expect(b.sftpUsername).toMatch(/^slug-twin-[a-z0-9]{6}$/);
    expect(b.sftpUsername).not.toBe(a.sftpUsername);
  });

  test("a given username is kept; hosted is the default when no server is named", async () => {
    const c = await created({ name: "Given Username", sftpUsername: "acme.partner_01", awsPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG0k partner@laptop" });
    expect(c.useHostedSFTP).toBe(true);
    expect(c.sftpUsername).toBe("acme.partner_01");
    expect(c.awsPublicKey).toBe("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG0k partner@laptop");
    expect(c.credentialsSet).toEqual([]);
    expect((await storedRow(c.id))?.sftpUsername).toBe("acme.partner_01");
  });

  test("sftpServerDataId 'srv_hosted' selects the hosted server", async () => {
    const c = await created({ name: "Hosted By Id", sftpServerDataId: "srv_hosted" });
    expect(c.useHostedSFTP).toBe(true);
    expect(c.sftpServerDataId).toBe("srv_hosted");
    expect(c.sftpUsername).toMatch(/^hosted-by-id-[a-z0-9]{6}$/);
  });
});

describe("self-hosted SFTP connections", () => {
  test("an inline sftpServer creates a server record; folders are normalised to absolute paths", async () => {
    const c = await created({
      name: "Customer Box",
      useHostedSFTP: false,
      sftpUsername: "bob",
      sftpPassword: "pw-customer",
      sftpServer: { host: "sftp.customer.example", port: 2222, rootDirectory: "data/", inboundFolder: "in", outboundFolder: "./out/" },
    });
    expect(c.useHostedSFTP).toBe(false);
    expect(c.sftpUsername).toBe("bob");
    expect(c.sftpServerDataId).toStartWith("srv_");
    expect(c.sftpServerDataId).not.toBe("srv_hosted");
    expect(c.sftpServer).toEqual({
      id: c.sftpServerDataId,
      hosted: false,
      host: "sftp.customer.example",
      port: 2222,
      rootDirectory: "/data",
      inboundFolder: "/in",
      outboundFolder: "/out",
    });
    const server = await storedServer(c.sftpServerDataId);
    expect(server?.workspaceId).toBe(ws.workspaceId);
    expect(server?.host).toBe("sftp.customer.example");
  });

  test("an sftpServer without useHostedSFTP implies self-hosted; port and folders default", async () => {
    const c = await created({ name: "Implied Self Hosted", sftpUsername: "carol", sftpServer: { host: "10.1.2.3" } });
    expect(c.useHostedSFTP).toBe(false);
    expect(c.sftpServer).toMatchObject({ host: "10.1.2.3", port: 22, rootDirectory: "/", inboundFolder: "/inbound", outboundFolder: "/outbound" });
  });

  test("sftpServerDataId reuses an existing server; the server lives until its last connection is deleted", async () => {
    const first = await created({ name: "Shared Server A", sftpServer: { host: "shared.example.com", port: 2200 } });
    const serverId = first.sftpServerDataId as string;
    const second = await created({ name: "Shared Server B", sftpServerDataId: serverId, sftpUsername: "dave" });
    expect(second.useHostedSFTP).toBe(false);
    expect(second.sftpServerDataId).toBe(serverId);
    expect(second.sftpServer).toEqual(first.sftpServer);

    expect((await h.api(ws, "DELETE", `/connections/${first.id}`)).status).toBe(200);
    expect(await storedServer(serverId)).toBeDefined();
    expect((await get(second.id)).body.sftpServer.host).toBe("shared.example.com");

    const del = await h.api(ws, "DELETE", `/connections/${second.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: second.id, deleted: true });
    expect(await storedServer(serverId)).toBeUndefined();
  });

  test("a hosted connection moves to the customer's server only with useHostedSFTP: false", async () => {
    const c = await created({ name: "Move To Own", sftpPassword: "pw" });
    const r = await patch(c.id, { name: "Move To Own", useHostedSFTP: false, sftpUsername: "svc", sftpServer: { host: "own.example.com" } });
    expect(r.status).toBe(200);
    expect(r.body.useHostedSFTP).toBe(false);
    expect(r.body.sftpServer).toMatchObject({ hosted: false, host: "own.example.com", port: 22 });
  });

  test("a connection read back can be sent back unchanged: read-only members are ignored", async () => {
    for (const body of [
      { name: "Round Trip Hosted", sftpPassword: "pw" },
      { name: "Round Trip Own", sftpUsername: "rt", sftpServer: { host: "rt.example.com", port: 2200 } },
      { name: "Round Trip Mail", type: "EMAIL", emailAllowedFormats: ["csv"] },
    ]) {
      const c = await created(body);
      h.clock.advance(1000);
      const r = await patch(c.id, c);
      expect(r.status).toBe(200);
      const { updatedAt, ...rest } = r.body;
      const { updatedAt: before, ...restBefore } = c;
      expect(rest).toEqual(restBefore);
      expect(new Date(updatedAt).getTime()).toBe(new Date(before).getTime() + 1000);
    }
  });
});

describe("EMAIL connections", () => {
  test("create generates an inbound address and normalises formats and senders", async () => {
    const r = await create({
      name: "Invoices By Mail",
      type: "EMAIL",
      emailAllowedFormats: ["CSV", ".json", "csv", " XML "],
      emailAllowedSenders: ["Billing@Vendor.com", "@partner.org"],
      emailSubjectFilter: "Invoice",
    });
    expect(r.status).toBe(200);
    const c = r.body;
    expect(c.type).toBe("EMAIL");
    expect(c.useHostedSFTP).toBe(false);
    expect(c.emailInbox.inboundAddress).toMatch(/^invoices-by-mail-[a-z0-9]{6}@inbound\.localhost$/);
    expect(c.emailAllowedFormats).toEqual(["csv", "json", "xml"]);
    expect(c.emailAllowedSenders).toEqual(["billing@vendor.com", "@partner.org"]);
    expect(c.emailSubjectFilter).toBe("Invoice");
    expect(c).not.toHaveProperty("sftpUsername");
    expect(c).not.toHaveProperty("sftpServer");
    expect(c).not.toHaveProperty("sftpServerDataId");
    expect(c.credentialsSet).toEqual([]);
    expect((await get(c.id)).body).toEqual(c);
  });

  test("PATCH keeps the inbound address and replaces the members it names", async () => {
    const c = await created({ name: "Mailbox Patch", type: "EMAIL", emailAllowedFormats: ["csv"], emailAllowedSenders: ["a@b.com"] });
    h.clock.advance(1000);
    const r = await patch(c.id, { name: "Mailbox Patched", emailAllowedFormats: ["TSV", ".txt"], emailAllowedSenders: null });
    expect(r.status).toBe(200);
    expect(r.body.emailInbox.inboundAddress).toBe(c.emailInbox.inboundAddress);
    expect(r.body.name).toBe("Mailbox Patched");
    expect(r.body.emailAllowedFormats).toEqual(["tsv", "txt"]);
    expect(r.body).not.toHaveProperty("emailAllowedSenders");
    expect(r.body.type).toBe("EMAIL");
  });
});

describe("PATCH semantics", () => {
  test("only name given: every other member is kept, updatedAt moves, createdAt stays", async () => {
    const c = await created({
      name: "Patch Keep",
      sftpUsername: "erin",
      sftpPassword: "pw-erin",
      sftpPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----",
      awsUserName: "aws-erin",
      ipWhitelist: ["10.0.0.0/8", "192.168.1.10"],
      sftpServer: { host: "keep.example.com", port: 2022, inboundFolder: "/drop" },
    });
    h.clock.advance(60_000);
    const r = await patch(c.id, { name: "Patch Kept" });
    expect(r.status).toBe(200);
    const { name, updatedAt, ...rest } = r.body;
    const { name: _n, updatedAt: before, ...restBefore } = c;
    expect(name).toBe("Patch Kept");
    expect(rest).toEqual(restBefore);
    expect(rest.credentialsSet).toEqual(["sftpPassword", "sftpPrivateKey"]);
    expect(new Date(updatedAt).getTime() - new Date(before).getTime()).toBe(60_000);
    expect((await get(c.id)).body).toEqual(r.body);
  });

  test("null clears optional members; a server change edits the bound server in place", async () => {
    const c = await created({
      name: "Patch Clear",
      sftpUsername: "frank",
      awsUserName: "aws-frank",
      awsPublicKey: "ssh-rsa AAAAB3NzaC1yc2E= frank",
      ipWhitelist: ["10.0.0.1"],
      sftpServer: { host: "old.example.com" },
    });
    const r = await patch(c.id, {
      name: "Patch Clear",
      awsUserName: null,
      awsPublicKey: null,
      ipWhitelist: null,
      sftpServer: { host: "new.example.com", port: 2222 },
    });
    expect(r.status).toBe(200);
    expect(r.body).not.toHaveProperty("awsUserName");
    expect(r.body).not.toHaveProperty("awsPublicKey");
    expect(r.body.ipWhitelist).toEqual([]);
    expect(r.body.sftpUsername).toBe("frank");
    expect(r.body.sftpServerDataId).toBe(c.sftpServerDataId);
    expect(r.body.sftpServer).toMatchObject({ host: "new.example.com", port: 2222 });
    const row = await storedRow(c.id);
    expect(row?.awsUserName).toBeNull();
    expect(row?.awsPublicKey).toBeNull();
    expect(row?.ipWhitelist).toEqual([]);

    const refilled = await patch(c.id, { name: "Patch Clear", ipWhitelist: ["10.0.0.2", "10.0.0.2", "2001:db8::/32"] });
    expect(refilled.body.ipWhitelist).toEqual(["10.0.0.2", "2001:db8::/32"]);
    const emptied = await patch(c.id, { name: "Patch Clear", ipWhitelist: [] });
    expect(emptied.body.ipWhitelist).toEqual([]);
  });

  test("secrets are replaced and cleared, and credentialsSet follows", async () => {
    const c = await created({ name: "Patch Secrets", sftpPassword: "first-password", awsPassword: "aws-first" });
    expect(c.credentialsSet).toEqual(["sftpPassword", "awsPassword"]);
    const sealedBefore = (await storedRow(c.id))?.sftpPasswordEnc;

    const replaced = await patch(c.id, { name: "Patch Secrets", sftpPassword: "second-password", sftpPassphrase: "phrase" });
    expect(replaced.status).toBe(200);
    expect(replaced.body.credentialsSet).toEqual(["sftpPassword", "sftpPassphrase", "awsPassword"]);
    expect(replaced.body).not.toHaveProperty("sftpPassword");
    expect((await storedRow(c.id))?.sftpPasswordEnc).not.toBe(sealedBefore);
    const legacy = await h.request("GET", `/connections/${c.id}`, { key: ws.apiKey, version: LEGACY });
    expect(legacy.body.sftpPassword).toBe("second-password");
    expect(legacy.body.sftpPassphrase).toBe("phrase");
    expect(legacy.body.awsPassword).toBe("aws-first");

    const cleared = await patch(c.id, { name: "Patch Secrets", sftpPassword: null, awsPassword: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.credentialsSet).toEqual(["sftpPassphrase"]);
    const row = await storedRow(c.id);
    expect(row?.sftpPasswordEnc).toBeNull();
    expect(row?.awsPasswordEnc).toBeNull();
    const legacyAfter = await h.request("GET", `/connections/${c.id}`, { key: ws.apiKey, version: LEGACY });
    expect(legacyAfter.body).not.toHaveProperty("sftpPassword");
    expect(legacyAfter.body.sftpPassphrase).toBe("phrase");
  });

  test("a self-hosted connection can move to the hosted server; its unused server record is removed", async () => {
    const c = await created({ name: "Move To Hosted", sftpUsername: "gina", sftpServer: { host: "leaving.example.com" } });
    const serverId = c.sftpServerDataId as string;
    const r = await patch(c.id, { name: "Move To Hosted", useHostedSFTP: true, sftpUsername: "gina-hosted" });
    expect(r.status).toBe(200);
    expect(r.body.useHostedSFTP).toBe(true);
    expect(r.body.sftpServerDataId).toBe("srv_hosted");
    expect(r.body.sftpUsername).toBe("gina-hosted");
    expect(await storedServer(serverId)).toBeUndefined();
  });
});

describe("listing", () => {
  let lw: TestWorkspace;
  const names = ["List Alpha", "List Beta", "List Gamma", "Mail Delta", "List Epsilon"];

  beforeAll(async () => {
    lw = await h.workspace({ name: "Lister" });
    for (const name of names) {
      h.clock.advance(1000);
      await created(name.startsWith("Mail") ? { name, type: "EMAIL", emailAllowedFormats: ["csv"] } : { name }, lw);
    }
  });

  test("a bare array, newest first, with x-total-count; page and limit select a slice", async () => {
    const all = await h.api(lw, "GET", "/connections");
    expect(all.status).toBe(200);
    expect(Array.isArray(all.body)).toBe(true);
    expect(all.body.map((c: { name: string }) => c.name)).toEqual([...names].reverse());
    expect(all.headers.get("x-total-count")).toBe("5");
    for (const c of all.body) expect(c).toEqual((await get(c.id, lw)).body);

    const p2 = await h.api(lw, "GET", "/connections?page=2&limit=2");
    expect(p2.status).toBe(200);
    expect(p2.body.map((c: { name: string }) => c.name)).toEqual(["List Gamma", "List Beta"]);
    expect(p2.headers.get("x-total-count")).toBe("5");
    expect(p2.headers.get("x-total-pages")).toBe("3");

    const p3 = await h.api(lw, "GET", "/connections?page=3&limit=2");
    expect(p3.body.map((c: { name: string }) => c.name)).toEqual(["List Alpha"]);
    const beyond = await h.api(lw, "GET", "/connections?page=9&limit=2");
    expect(beyond.body).toEqual([]);
    expect(beyond.headers.get("x-total-count")).toBe("5");
  });

  test("name matches part of the name ignoring case; type filters by kind; both combine", async () => {
    const byName = await h.api(lw, "GET", "/connections?name=GAM");
    expect(byName.body.map((c: { name: string }) => c.name)).toEqual(["List Gamma"]);
    expect(byName.headers.get("x-total-count")).toBe("1");

    const email = await h.api(lw, "GET", "/connections?type=EMAIL");
    expect(email.body.map((c: { name: string }) => c.name)).toEqual(["Mail Delta"]);
    const sftp = await h.api(lw, "GET", "/connections?type=SFTP&name=list%20");
    expect(sftp.body.map((c: { name: string }) => c.name)).toEqual(["List Epsilon", "List Gamma", "List Beta", "List Alpha"]);
    expect(sftp.headers.get("x-total-count")).toBe("4");

    const pct = await h.api(lw, "GET", "/connections?name=%25");
    expect(pct.body).toEqual([]);
  });

  test("another workspace's connections are not listed", async () => {
    const mine = await h.api(ws, "GET", "/connections?name=List%20");
    expect(mine.body).toEqual([]);
  });
});

describe("legacy /clients aliases", () => {
  test("behave like /connections with the same JSON and carry deprecation headers", async () => {
    const viaClients = await h.api(ws, "POST", "/clients", { name: "Via Clients", sftpPassword: "pw-clients" });
    expect(viaClients.status).toBe(200);
    const id = viaClients.body.id as string;
    expect(viaClients.body).toEqual((await get(id)).body);
    expect(viaClients.body).not.toHaveProperty("sftpPassword");

    const one = await h.api(ws, "GET", `/clients/${id}`);
    expect(one.body).toEqual((await get(id)).body);
    const list = await h.api(ws, "GET", "/clients?name=via%20clients");
    expect(list.body).toEqual((await h.api(ws, "GET", "/connections?name=via%20clients")).body);
    expect(list.body).toEqual([one.body]);
    expect(list.headers.get("x-total-count")).toBe("1");
    const tested = await h.api(ws, "POST", `/clients/${id}/test-connection`);
    const untimed = (r: { checks: { durationMs?: number }[] }) => ({ ...r, checks: r.checks.map(({ durationMs: _, ...c }) => c) });
    expect(untimed(tested.body)).toEqual(untimed((await h.api(ws, "POST", `/connections/${id}/test-connection`)).body));
    h.clock.advance(1000);
    const renamed = await h.api(ws, "PATCH", `/clients/${id}`, { name: "Via Clients Renamed" });
    expect(renamed.body.name).toBe("Via Clients Renamed");
    expect(renamed.body.updatedAt).not.toBe(one.body.updatedAt);
    expect((await get(id)).body).toEqual(renamed.body);

    for (const r of [viaClients, one, list, tested, renamed]) {
      expect(r.status).toBe(200);
      expect(r.headers.get("deprecation")).toBe("true");
      expect(r.headers.get("sunset")).toContain("2027-05-25");
      expect(r.headers.get("link")).toContain("/docs/migrations/2026-05-25");
      expect(r.headers.get("service-version")).toBe(LATEST);
    }

    const canonical = await get(id);
    expect(canonical.headers.get("deprecation")).toBeNull();
    expect(canonical.headers.get("sunset")).toBeNull();

    const del = await h.api(ws, "DELETE", `/clients/${id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id, deleted: true });
    expect(del.headers.get("deprecation")).toBe("true");
    expect((await get(id)).status).toBe(404);
  });
});

describe("credentials at rest", () => {
  test("stored encrypted: no *_enc column contains the plaintext, and each decrypts to its value", async () => {
    const secrets = {
      sftpPassword: "plain-password-Zq81",
      sftpPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
      sftpPassphrase: "plain-passphrase-Kx02",
      awsPassword: "plain-aws-Pw77",
    };
    const c = await created({ name: "At Rest", sftpUsername: "henry", sftpServer: { host: "rest.example.com" }, ...secrets });
    const row = await storedRow(c.id);
    const sealed = {
      sftpPassword: row?.sftpPasswordEnc,
      sftpPrivateKey: row?.sftpPrivateKeyEnc,
      sftpPassphrase: row?.sftpPassphraseEnc,
      awsPassword: row?.awsPasswordEnc,
    };
    const everything = JSON.stringify(row);
    for (const [field, plain] of Object.entries(secrets)) {
      const value = sealed[field as keyof typeof sealed];
      expect(typeof value).toBe("string");
      expect(value).not.toContain(plain);
      expect(value).not.toContain(Buffer.from(plain).toString("base64"));
      expect(everything).not.toContain(plain);
      expect(h.svc.secrets.open(value as string)).toBe(plain);
    }
  });
});

describe("test-connection", () => {
  test("a peer that identifies as SSH but is not one: tcp_connect and ssh_handshake pass, the login fails, the folders are skipped", async () => {
    const server = peer("SSH-2.0-OpenSSH_9.6 test\r\n");
    try {
      const c = await created({
        name: "Probe SSH",
        sftpUsername: "ivan",
        sftpPassword: "pw-ivan",
        sftpServer: { host: "127.0.0.1", port: server.port },
      });
      const r = await h.api(ws, "POST", `/connections/${c.id}/test-connection`);
      expect(r.status).toBe(200);
      expect(r.body.connectionId).toBe(c.id);
      expect(checkOf(r.body, "tcp_connect")).toBe("passed");
      expect(checkOf(r.body, "ssh_handshake")).toBe("passed");
      expect(r.body.checks.find((x: { name: string }) => x.name === "ssh_handshake").message).toContain("SSH-2.0-OpenSSH_9.6");
      expect(checkOf(r.body, "credentials")).toBe("passed");
      // Logging in for real (test/customer-sftp.test.ts has a real OpenSSH server): this peer hangs up after its banner.
      expect(checkOf(r.body, "login")).toBe("failed");
      expect(checkOf(r.body, "inbound_folder")).toBe("skipped");
      expect(checkOf(r.body, "outbound_folder")).toBe("skipped");
      expect(r.body.ok).toBe(false);
    } finally {
      server.stop(true);
    }
  });

  test("a peer that is not SSH: tcp_connect passes, ssh_handshake fails, ok is false", async () => {
    const server = peer("HTTP/1.1 400 Bad Request\r\n\r\n");
    try {
      const c = await created({
        name: "Probe HTTP",
        sftpUsername: "judy",
        sftpPassword: "pw-judy",
        sftpServer: { host: "127.0.0.1", port: server.port },
      });
      const r = await h.api(ws, "POST", `/connections/${c.id}/test-connection`);
      expect(r.status).toBe(200);
      expect(checkOf(r.body, "tcp_connect")).toBe("passed");
      expect(checkOf(r.body, "ssh_handshake")).toBe("failed");
      expect(r.body.ok).toBe(false);
    } finally {
      server.stop(true);
    }
  });

  test("a closed port: tcp_connect fails, the handshake is skipped, ok is false", async () => {
    const port = closedPort();
    const c = await created({
      name: "Probe Closed",
      sftpUsername: "kim",
      sftpPassword: "pw-kim",
      sftpServer: { host: "127.0.0.1", port },
    });
    const r = await h.api(ws, "POST", `/connections/${c.id}/test-connection`);
    expect(r.status).toBe(200);
    expect(checkOf(r.body, "tcp_connect")).toBe("failed");
    expect(checkOf(r.body, "ssh_handshake")).toBe("skipped");
    expect(r.body.ok).toBe(false);
  });

  test("a reachable self-hosted server without credentials fails the credentials check", async () => {
    const server = peer("SSH-2.0-Test\r\n");
    try {
      const c = await created({ name: "Probe No Creds", sftpServer: { host: "127.0.0.1", port: server.port } });
      const r = await h.api(ws, "POST", `/connections/${c.id}/test-connection`);
      expect(checkOf(r.body, "ssh_handshake")).toBe("passed");
      expect(checkOf(r.body, "credentials")).toBe("failed");
      expect(r.body.ok).toBe(false);
    } finally {
      server.stop(true);
    }
  });

  test("hosted: credentials pass with a password or public key, fail without; the service's SFTP address is probed", async () => {
    // Nothing listens on this port: the hosted server check fails honestly (test/customer-sftp.test.ts probes a live one).
    const saved = h.svc.settings.sftpPort;
    h.svc.settings.sftpPort = closedPort();
    const withPw = await created({ name: "Hosted Probe Pw", sftpPassword: "pw" });
    const ok = await h.api(ws, "POST", `/connections/${withPw.id}/test-connection`);
    expect(ok.status).toBe(200);
    expect(checkOf(ok.body, "credentials")).toBe("passed");
    expect(checkOf(ok.body, "hosted_account")).toBe("passed");
    expect(checkOf(ok.body, "hosted_server")).toBe("failed");
    expect(ok.body.ok).toBe(false);

    const bare = await created({ name: "Hosted Probe Bare" });
    const bad = await h.api(ws, "POST", `/connections/${bare.id}/test-connection`);
    expect(checkOf(bad.body, "credentials")).toBe("failed");
    expect(bad.body.ok).toBe(false);

    await patch(bare.id, { name: "Hosted Probe Bare", awsPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 partner" });
    const fixed = await h.api(ws, "POST", `/connections/${bare.id}/test-connection`);
    expect(checkOf(fixed.body, "credentials")).toBe("passed");
    h.svc.settings.sftpPort = saved;
  });

  test("EMAIL: reports the inbound address and formats, and that the mail receiver does not answer when nothing listens", async () => {
    const c = await created({ name: "Probe Mail", type: "EMAIL", emailAllowedFormats: ["csv", "json"] });
    const saved = h.svc.settings.smtpPort;
    h.svc.settings.smtpPort = closedPort();
    const r = await h.api(ws, "POST", `/connections/${c.id}/test-connection`);
    h.svc.settings.smtpPort = saved;
    expect(r.status).toBe(200);
    expect(r.body.connectionId).toBe(c.id);
    const inbound = r.body.checks.find((x: { name: string }) => x.name === "inbound_address");
    expect(inbound.status).toBe("passed");
    expect(inbound.message).toContain(c.emailInbox.inboundAddress);
    expect(r.body.checks.find((x: { name: string }) => x.name === "allowed_formats").message).toContain("csv, json");
    expect(checkOf(r.body, "mail_receiver")).toBe("failed");
    expect(r.body.checks.find((x: { name: string }) => x.name === "mail_receiver").message).toContain("does not answer");
    expect(r.body.ok).toBe(false);
  });

  test("an unknown connection is a 404", async () => {
    const r = await h.api(ws, "POST", "/connections/conn_nope/test-connection");
    expect(r.status).toBe(404);
    expect(r.body.message).toContain("conn_nope");
  });
});
