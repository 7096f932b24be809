import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { openInput } from "../src/engine/parse";
import { isPgpInput, type PgpKeys } from "../src/engine/parse/pgp";
import { fetchLink } from "./helpers/fixture-runs";
import { Gpg } from "./helpers/gpg";
import { Harness, type TestWorkspace } from "./helpers/harness";
import * as outbound from "./helpers/outbound";
import { outboundPipeline } from "./helpers/outbound";
import { createPipeline, ITEM_MAPPINGS, ITEMS_CSV, uploadFile, waitForRun } from "./helpers/runs";

/**
 * OpenPGP input made by the real gpg: the service holds its own key pair
 * (passphrase-protected) and the partner's public key; the partner encrypts
 * to the service and signs with its key.
 */
let gpg: Gpg;
let service: { publicKey: string; privateKey: string };
let partner: { publicKey: string; privateKey: string };
let keys: PgpKeys;
const PASS = "correct horse battery staple";

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  gpg = new Gpg();
  service = gpg.generate("service@files.example", PASS);
  partner = gpg.generate("partner@acme.example");
  gpg.generate("stranger@elsewhere.example");
  keys = { privateKey: service.privateKey, passphrase: PASS, partnerPublicKey: partner.publicKey };
  // Two engine workers whatever the machine: the larger upload below is read in stripes.
  h = await Harness.start({ env: { WORKERS: "2" } });
  ws = await h.workspace();
}, 60_000);

afterAll(async () => {
  await h.close();
  gpg.close();
});

const signedByPartner = (data: string | Uint8Array, armor = false) => gpg.encrypt(data, { to: "service@files.example", signer: "partner@acme.example", armor });

async function readAll(bytes: Uint8Array, filename: string, pgp: PgpKeys | null = keys) {
  async function* source() {
    // Small pieces: the message is read as it streams, not whole.
    for (let at = 0; at < bytes.length; at += 1000) yield bytes.slice(at, at + 1000);
  }
  const input = await openInput(source(), { filename, pgp: pgp ?? undefined });
  const rows: Record<string, unknown>[] = [];
  for await (const b of input.batches) rows.push(...b);
  return { rows, summary: input.summary };
}

describe("the engine decrypts OpenPGP input", () => {
  test("binary and armored messages, signed by the partner, by name or by content; gzip inside is read", async () => {
    for (const [bytes, name] of [
      [signedByPartner(ITEMS_CSV), "items.csv.pgp"],
      [signedByPartner(ITEMS_CSV, true), "items.csv.asc"],
      [signedByPartner(ITEMS_CSV), "items.csv"],
      [signedByPartner(ITEMS_CSV, true), "upload"],
      [signedByPartner(gzipSync(ITEMS_CSV)), "items.csv.gz.gpg"],
    ] as const) {
      const { rows, summary } = await readAll(bytes, name);
      expect(rows.length, name).toBe(3);
      expect(rows[1]).toEqual({ SKU: "b-2", Qty: "10", Name: "Nut" });
      expect(summary).toMatchObject({ format: "csv", pgp: { signatureVerified: true } });
    }
  });

  test("text is not taken for a message: names and first bytes decide", () => {
    const enc = (t: string) => new TextEncoder().encode(t);
    expect(isPgpInput(enc("Éclair,Qty\nA,1\n"), "x.csv")).toBe(false);
    expect(isPgpInput(enc("SKU,Qty\n"), "x.csv")).toBe(false);
    expect(isPgpInput(enc("SKU,Qty\n"), "x.csv.gpg")).toBe(true);
    expect(isPgpInput(signedByPartner("a"), "upload")).toBe(true);
    expect(isPgpInput(enc("\n  -----BEGIN PGP MESSAGE-----\n"), "upload")).toBe(true);
  });

  test("a larger file streams through in pieces", async () => {
    const csv = `id,name\n${Array.from({ length: 50_000 }, (_, i) => `${i},name-${i}`).join("\n")}\n`;
    const { rows } = await readAll(signedByPartner(csv), "big.csv.pgp");
    expect(rows.length).toBe(50_000);
    expect(rows[49_999]).toEqual({ id: "49999", name: "name-49999" });
  });

  test("without a partner key no signature is needed", async () => {
    const plain = gpg.encrypt(ITEMS_CSV, { to: "service@files.example" });
    const { rows, summary } = await readAll(plain, "items.csv.pgp", { privateKey: service.privateKey, passphrase: PASS });
    expect(rows.length).toBe(3);
    expect(summary.pgp).toEqual({ signatureVerified: false });
  });

  test("refusals name the cause: unsigned, signed by someone else, another recipient, wrong passphrase, no key", async () => {
    const unsigned = gpg.encrypt(ITEMS_CSV, { to: "service@files.example" });
    await expect(readAll(unsigned, "a.csv.pgp")).rejects.toThrow(/signature does not verify with the connection's pgpPartnerPublicKey/);
    const stranger = gpg.encrypt(ITEMS_CSV, { to: "service@files.example", signer: "stranger@elsewhere.example" });
    await expect(readAll(stranger, "a.csv.pgp")).rejects.toThrow(/signature does not verify with the connection's pgpPartnerPublicKey/);
    const other = gpg.encrypt(ITEMS_CSV, { to: "stranger@elsewhere.example", signer: "partner@acme.example" });
    await expect(readAll(other, "a.csv.pgp")).rejects.toThrow(/cannot be decrypted with the connection's pgpPrivateKey/);
    await expect(readAll(signedByPartner(ITEMS_CSV), "a.csv.pgp", { ...keys, passphrase: "wrong" })).rejects.toThrow(/pgpPassphrase does not unlock its pgpPrivateKey/);
    await expect(readAll(signedByPartner(ITEMS_CSV), "a.csv.pgp", null)).rejects.toThrow(/is an OpenPGP message: set pgpPrivateKey/);
  });

  test("a tampered message fails", async () => {
    const bytes = signedByPartner(ITEMS_CSV.repeat(50));
    bytes[bytes.length - 40]! ^= 0xff;
    await expect(readAll(bytes, "a.csv.pgp")).rejects.toThrow(/OpenPGP message/);
  });
});

async function pgpConnection(extra: Record<string, unknown> = {}) {
  return h.ok(ws, "POST", "/connections", {
    name: `Acme PGP ${crypto.randomUUID().slice(0, 8)}`,
    type: "SFTP",
    useHostedSFTP: true,
    pgpPrivateKey: service.privateKey,
    pgpPassphrase: PASS,
    pgpPartnerPublicKey: partner.publicKey,
    ...extra,
  });
}

describe("connections hold the OpenPGP keys", () => {
  test("REST: the private key and passphrase are write-only; the partner's public key is returned", async () => {
    const conn = await pgpConnection();
    for (const body of [conn, await h.ok(ws, "GET", `/connections/${conn.id}`)]) {
      expect(body.credentialsSet).toEqual(expect.arrayContaining(["pgpPrivateKey", "pgpPassphrase"]));
      expect(body.pgpPartnerPublicKey).toBe(partner.publicKey.trim());
      expect(JSON.stringify(body)).not.toContain("PRIVATE KEY");
      expect(JSON.stringify(body)).not.toContain(PASS);
    }
    // Stored sealed, not in clear.
    const [row] = (await h.svc.db.read.select().from(h.svc.db.t.connections)).filter((r) => r.id === conn.id);
    expect(row!.pgpPrivateKeyEnc).not.toContain("PRIVATE KEY");
    expect(h.svc.secrets.open(row!.pgpPrivateKeyEnc!)).toBe(service.privateKey);
    // null removes a key.
    const cleared = await h.ok(ws, "PATCH", `/connections/${conn.id}`, { name: conn.name, pgpPassphrase: null, pgpPartnerPublicKey: null });
    expect(cleared.credentialsSet).toContain("pgpPrivateKey");
    expect(cleared.credentialsSet).not.toContain("pgpPassphrase");
    expect("pgpPartnerPublicKey" in cleared).toBe(false);
  });

  test("bad key text is refused naming the field, on REST, GraphQL and tRPC", async () => {
    const res = await h.api(ws, "POST", "/connections", { name: "Bad key", type: "SFTP", useHostedSFTP: true, pgpPrivateKey: partner.publicKey });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/pgpPrivateKey: must be an armored OpenPGP private key/);
    const gql = await h.graphql(ws.apiKey, `mutation($i: CreateConnectionInput!) { createConnection(input: $i) { id } }`, {
      i: { name: "Bad key", type: "SFTP", useHostedSFTP: true, pgpPartnerPublicKey: "ssh-ed25519 AAAA" },
    });
    expect(JSON.stringify(gql.body.errors)).toMatch(/pgpPartnerPublicKey: must be an armored OpenPGP public key/);
    await expect(h.trpc(ws).connections.create({ name: "Bad key", type: "SFTP", useHostedSFTP: true, pgpPrivateKey: "nope" })).rejects.toThrow(/pgpPrivateKey/);
  });

  test("GraphQL and tRPC take and show the same fields", async () => {
    const made = await h.graphql(
      ws.apiKey,
      `mutation($i: CreateConnectionInput!) { createConnection(input: $i) { id credentialsSet pgpPartnerPublicKey } }`,
      { i: { name: "Acme via GraphQL", type: "SFTP", useHostedSFTP: true, pgpPrivateKey: service.privateKey, pgpPassphrase: PASS, pgpPartnerPublicKey: partner.publicKey } },
    );
    expect(made.body.errors).toBeUndefined();
    expect(made.body.data.createConnection.credentialsSet).toEqual(["pgpPrivateKey", "pgpPassphrase"]);
    expect(made.body.data.createConnection.pgpPartnerPublicKey).toBe(partner.publicKey.trim());
    const viaTrpc = await h.trpc(ws).connections.get({ id: made.body.data.createConnection.id });
    expect(viaTrpc.credentialsSet).toEqual(["pgpPrivateKey", "pgpPassphrase"]);
    expect(viaTrpc.pgpPartnerPublicKey).toBe(partner.publicKey.trim());
  });
});

describe("an encrypted upload through the API", () => {
  test("upload -> run -> processed JSON; the run notes the verified signature", async () => {
    const conn = await pgpConnection();
    const fx = await createPipeline(h, ws, { connectionId: conn.id });
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "items.csv.pgp", content: signedByPartner(ITEMS_CSV) }, { type: "application/pgp-encrypted" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const done = await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
    expect(done.status, done.errorMessage).toBe("completed");
    expect(done.metadata.input).toMatchObject({ format: "csv", pgp: { signatureVerified: true } });
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${res.body.id}/processed`);
    expect(await (await fetchLink(h, link.url)).json()).toEqual([
      { sku: "A-1", qty: 3, name: "Bolt" },
      { sku: "B-2", qty: 10, name: "Nut" },
      { sku: "C-3", qty: 7, name: "Washer" },
    ]);
  });

  test("a larger gzipped and encrypted upload is unpacked to a temp file and read in stripes: every row, the temp file gone", async () => {
    const conn = await pgpConnection();
    const fx = await createPipeline(h, ws, { connectionId: conn.id });
    // Hex text barely compresses: over 2 MiB gzipped, where a packed file is read in stripes.
    const lines = ["SKU,Qty,Name"];
    for (let i = 0; i < 60_000; i++) lines.push(`${randomBytes(16).toString("hex")},${i},${randomBytes(16).toString("hex")}`);
    const packed = signedByPartner(gzipSync(`${lines.join("\n")}\n`));
    expect(packed.byteLength).toBeGreaterThan(2 * 1024 * 1024);
    const tmp = join(h.dataDir, "objects", ".fps", "tmp");
    // The unpacked file is unlinked once open (the store's own temp files, written and renamed, keep their names).
    const tempFiles = () =>
      readdirSync("/proc/self/fd").filter((fd) => {
        try {
          const target = readlinkSync(`/proc/self/fd/${fd}`);
          return target.startsWith(tmp) && target.endsWith(" (deleted)");
        } catch {
          return false;
        }
      });
    let sawTemp = false;
    const watch = setInterval(() => {
      if (tempFiles().length > 0) sawTemp = true;
    }, 2);
    let res: Awaited<ReturnType<typeof uploadFile>>;
    let done: Awaited<ReturnType<typeof waitForRun>>;
    try {
      res = await uploadFile(h, ws, fx.pipeline.id, { name: "items.csv.gz.pgp", content: packed }, { type: "application/pgp-encrypted" });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      done = await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
    } finally {
      clearInterval(watch);
    }
    expect(done.status, done.errorMessage).toBe("completed");
    expect(sawTemp).toBe(true);
    expect(done.metadata.rows).toMatchObject({ total: 60_000, valid: 60_000 });
    expect(done.metadata.input).toMatchObject({ format: "csv", gzip: true, pgp: { signatureVerified: true } });
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${res.body.id}/processed`);
    const rows = (await (await fetchLink(h, link.url)).json()) as { sku: string; qty: number; name: string }[];
    expect(rows.length).toBe(60_000);
    const last = lines.at(-1)!.split(",");
    expect(rows.at(-1)).toEqual({ sku: last[0]!.toUpperCase(), qty: 59_999, name: last[2]! });
    expect(tempFiles()).toEqual([]);
  }, 60_000);

  test("a file signed by someone else fails the run with a clear message", async () => {
    const conn = await pgpConnection();
    const fx = await createPipeline(h, ws, { connectionId: conn.id });
    const bad = gpg.encrypt(ITEMS_CSV, { to: "service@files.example", signer: "stranger@elsewhere.example", armor: true });
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "items.csv.asc", content: bad }, { type: "text/plain" });
    const done = await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
    expect(done.status).toBe("failed");
    expect(done.errorMessage).toMatch(/signature does not verify with the connection's pgpPartnerPublicKey/);
    expect((await h.api(ws, "GET", `/files/pipeline-runs/${res.body.id}/processed`)).status).not.toBe(200);
  });

  test("a connection without a private key: the run fails saying which setting decrypts it", async () => {
    const fx = await createPipeline(h, ws);
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "items.csv.gpg", content: signedByPartner(ITEMS_CSV) }, { type: "application/octet-stream" });
    const done = await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
    expect(done.status).toBe("failed");
    expect(done.errorMessage).toMatch(/OpenPGP message: set pgpPrivateKey/);
  });
});

describe("outbound delivery encrypted to the partner", () => {
  test("the delivered file gets .pgp; gpg decrypts it with the partner's key and finds the service's good signature", async () => {
    const conn = await pgpConnection();
    const fx = await outboundPipeline(h, ws, { connectionId: conn.id, mappings: { ...ITEM_MAPPINGS, options: { outputFormat: "csv", pgpEncrypt: true } } });
    const created = await outbound.startUpload(h, ws, { connectionName: conn.name, pipelineName: fx.pipeline.name, totalParts: 1, filename: "nightly.json" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const done = await outbound.uploadAll(h, ws, created.body.uploadId, [[{ SKU: "x-1", Qty: "2", Name: "Pin" }]]);
    const run = await waitForRun(h, ws, done.runId, ["delivered", "failed"]);
    expect(run.status, run.errorMessage).toBe("delivered");
    expect(run.metadata.delivery).toMatchObject({ filename: "nightly.csv.pgp", path: "/outbound/nightly.csv.pgp" });
    expect(await outbound.readSpaceFile(h, ws, conn.id, "outbound/nightly.csv")).toBeNull();
    const file = await outbound.readSpaceFile(h, ws, conn.id, "outbound/nightly.csv.pgp");
    expect(new TextDecoder().decode(file!.subarray(0, 40))).not.toContain("sku,qty");
    const { plain, status } = gpg.decrypt(file!);
    expect(new TextDecoder().decode(plain)).toBe("sku,qty,name\r\nX-1,2,Pin\r\n");
    expect(status).toMatch(/GOODSIG [0-9A-F]+ service <service@files\.example>/);
  });

  test("without a partner key the run fails saying what is missing", async () => {
    const conn = await pgpConnection({ pgpPartnerPublicKey: null });
    const fx = await outboundPipeline(h, ws, { connectionId: conn.id, mappings: { ...ITEM_MAPPINGS, options: { pgpEncrypt: true } } });
    const created = await outbound.startUpload(h, ws, { connectionName: conn.name, pipelineName: fx.pipeline.name, totalParts: 1 });
    const done = await outbound.uploadAll(h, ws, created.body.uploadId, [[{ SKU: "x-1", Qty: "2", Name: "Pin" }]]);
    const run = await waitForRun(h, ws, done.runId, ["delivered", "failed"]);
    expect(run.status).toBe("failed");
    expect(run.errorMessage).toMatch(/pgpEncrypt\) but connection '.*' has no pgpPartnerPublicKey/);
  });
});
