import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { createEnginePool } from "../src/engine/pool";
import type { PgpKeys } from "../src/engine/parse/pgp";
import { mayUnpack, plainName } from "../src/engine/unpack";
import { type ProcessRequest, newEngineProgress } from "../src/engine/types";
import { jsonLines, localStore, request } from "./helpers/engine";
import { Gpg } from "./helpers/gpg";

/**
 * Packed input (gzip, OpenPGP) unpacked once to a temp file and read in
 * stripes (src/engine/unpack.ts): the same outcome as one worker reading it
 * whole, the temp file gone whatever the outcome, the limits still refusing
 * bombs.
 */
const t = localStore();
const root = (t.config as { root: string }).root;
const tmpFolder = join(root, ".fps", "tmp");
let gpg: Gpg;
let keys: PgpKeys;

beforeAll(() => {
  gpg = new Gpg();
  const service = gpg.generate("service@files.example", "pass");
  const partner = gpg.generate("partner@acme.example");
  gpg.generate("stranger@elsewhere.example");
  keys = { privateKey: service.privateKey, passphrase: "pass", partnerPublicKey: partner.publicKey };
}, 60_000);

afterAll(() => {
  gpg.close();
  t.close();
});

const SCHEMA = {
  id: "sch_unpack",
  version: "1",
  definition: { type: "object", properties: { id: { type: "integer" }, name: { type: "string" }, qty: { type: "integer" } }, required: ["id", "qty"] },
};
const MAPPINGS = {
  fieldMappings: [
    { source: "id", target: "id", transform: "integer" },
    { source: "name", target: "name", transform: "uppercase" },
    { source: "qty", target: "qty", transform: "integer" },
  ],
  validations: { onInvalidRow: "skip" },
};

/** `rows` rows; every 997th has no qty (skipped, so rejects are written and renumbered). */
function csv(rows: number): string {
  const lines = ["id,name,qty"];
  for (let i = 0; i < rows; i++) lines.push(`${i},"name, number ${i}",${i % 997 === 5 ? "" : i % 50}`);
  return `${lines.join("\n")}\n`;
}

/** Descriptors this process holds on files in the store's temp folder (an unlinked temp file shows as "... (deleted)"). */
function openTempFiles(): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(tmpFolder)) out.push(target);
    } catch {}
  }
  return out;
}

const tempNames = () => {
  try {
    return readdirSync(tmpFolder);
  } catch {
    return [];
  }
};

async function stored(filename: string, bytes: Uint8Array, mappings: unknown = MAPPINGS, pgp?: PgpKeys): Promise<ProcessRequest> {
  const req = request(t, filename, mappings, SCHEMA);
  await t.store.put(req.originalKey, bytes);
  return { ...req, size: bytes.byteLength, ...(pgp ? { pgp } : {}) };
}

/** Processes `req` with a two-worker pool that splits small files (watching for the temp file meanwhile), then with one worker reading it whole. */
async function bothWays(req: ProcessRequest, limits?: Parameters<typeof createEnginePool>[0]["limits"]) {
  const striped = createEnginePool({ size: 2, minSplitBytes: 1000, stripeBytes: 64 * 1024, limits });
  const whole = createEnginePool({ size: 1, limits });
  try {
    let sawTemp = false;
    const watch = setInterval(() => {
      if (openTempFiles().some((f) => f.endsWith("(deleted)"))) sawTemp = true;
    }, 2);
    const progress = newEngineProgress();
    const a = await striped.process(req, undefined, progress).finally(() => clearInterval(watch));
    const aText = await t.text(req.processedKey);
    const aRejects = await t.text(req.rejectsKey);
    const b = await whole.process(req);
    const bText = await t.text(req.processedKey);
    const bRejects = await t.text(req.rejectsKey);
    return { a, b, aText, bText, aRejects, bRejects, sawTemp, progress };
  } finally {
    await Promise.all([striped.close(), whole.close()]);
  }
}

const signed = (data: string | Uint8Array, signer = "partner@acme.example") => gpg.encrypt(data, { to: "service@files.example", signer });

describe("packed files in stripes", () => {
  test("which requests are unpacked, and under which name", () => {
    expect(plainName("orders.csv.gz.pgp")).toBe("orders.csv");
    expect(plainName("orders.tsv.GZ")).toBe("orders.tsv");
    const always = (_: ProcessRequest) => true;
    const req = { ...request(t, "orders.csv.gz", MAPPINGS, SCHEMA), size: 2_000_000 };
    const unpacked = (r: ProcessRequest, may = always) => mayUnpack(r, may, 8_000_000);
    expect(unpacked(req)).toBe(true);
    // A quarter of a plain file's threshold; without a size, one worker reads it.
    expect(unpacked({ ...req, size: 1_999_999 })).toBe(false);
    expect(unpacked({ ...req, size: undefined })).toBe(false);
    expect(unpacked({ ...req, filename: "orders.csv" })).toBe(false);
    // OpenPGP without the keys: one worker fails the run saying which setting to set.
    expect(unpacked({ ...req, filename: "orders.csv.gz.pgp" })).toBe(false);
    expect(unpacked({ ...req, filename: "orders.csv.gz.pgp", pgp: keys })).toBe(true);
    // S3 has no temp folder; a plain file the stripes could not read stays whole.
    expect(unpacked({ ...req, storage: { kind: "s3", bucket: "b", region: "r" } })).toBe(false);
    expect(unpacked(req, (r) => r.filename !== "orders.csv")).toBe(false);
  });

  test("gzip: the same processed file, rejects, counts and input as one worker, and the temp file is gone", async () => {
    const req = await stored("rows.csv.gz", gzipSync(csv(30_000)));
    const r = await bothWays(req);
    expect(r.a.ok, r.a.errorMessage).toBe(true);
    expect(r.sawTemp).toBe(true);
    expect(r.a.counts).toEqual(r.b.counts);
    expect(r.a.counts).toMatchObject({ total: 30_000, skipped: 31 });
    expect(r.a.errors).toEqual(r.b.errors);
    expect(r.a.input).toEqual(r.b.input!);
    expect(r.a.input).toMatchObject({ format: "csv", gzip: true });
    expect(r.aText).toBe(r.bText!);
    expect(r.aRejects).toBe(r.bRejects!);
    expect(jsonLines(r.aText!).at(-1)).toEqual({ id: 29_999, name: "NAME, NUMBER 29999", qty: 29_999 % 50 });
    // The run's progress counts the original's bytes, not the plain file's.
    expect(r.progress[1]).toBeLessThanOrEqual(req.size!);
    expect(r.progress[0]).toBe(30_000);
    expect(openTempFiles()).toEqual([]);
    expect(tempNames()).toEqual([]);
  }, 60_000);

  test("OpenPGP (gpg-encrypted and signed, gzip inside): the same outcome, the signature noted", async () => {
    const req = await stored("rows.csv.gz.pgp", signed(gzipSync(csv(20_000))), MAPPINGS, keys);
    const r = await bothWays(req);
    expect(r.a.ok, r.a.errorMessage).toBe(true);
    expect(r.sawTemp).toBe(true);
    expect(r.a.input).toEqual(r.b.input!);
    expect(r.a.input).toMatchObject({ format: "csv", gzip: true, pgp: { signatureVerified: true } });
    expect(r.a.counts).toEqual(r.b.counts);
    expect(r.aText).toBe(r.bText!);
    expect(r.aRejects).toBe(r.bRejects!);
    expect(openTempFiles()).toEqual([]);
  }, 60_000);

  test("a file the unpacking refuses fails with one worker's message, keeps nothing and leaves no temp file", async () => {
    const body = csv(20_000);
    const cases: [string, Uint8Array, RegExp][] = [
      ["stranger.csv.pgp", signed(body, "stranger@elsewhere.example"), /signature does not verify with the connection's pgpPartnerPublicKey/],
      ["tampered.csv.gz.pgp", (() => {
        const b = signed(gzipSync(body));
        b[b.length - 40]! ^= 0xff;
        return b;
      })(), /OpenPGP message/],
      ["cut.csv.gz", gzipSync(body).subarray(0, 60_000), /gzip-compressed but cannot be decompressed/],
    ];
    for (const [name, bytes, message] of cases) {
      const req = await stored(name, bytes, MAPPINGS, name.includes("pgp") ? keys : undefined);
      const r = await bothWays(req);
      expect(r.a.ok, name).toBe(false);
      expect(r.a.errorMessage, name).toMatch(message);
      expect(r.a.errorMessage).toBe(r.b.errorMessage!);
      expect(r.a.failure).toBe("input");
      expect(r.aText, name).toBeNull();
      expect(r.aRejects, name).toBeNull();
      expect(openTempFiles(), name).toEqual([]);
    }
    expect(tempNames()).toEqual([]);
  }, 60_000);

  test("bombs are still refused by the ratio and the size limits", async () => {
    const zeros = gzipSync(Buffer.alloc(64 * 1024 * 1024, "0"));
    const bomb = await stored("bomb.csv.gz", new Uint8Array(Buffer.concat([Buffer.from(gzipSync("id,name,qty\n")), zeros])));
    const r = await bothWays(bomb);
    expect(r.a.ok).toBe(false);
    expect(r.a.errorMessage).toMatch(/decompresses more than 100-fold .*MAX_DECOMPRESSION_RATIO/);
    const big = await stored("big.csv.gz", gzipSync(csv(50_000)));
    const limited = await bothWays(big, { maxDecompressedBytes: 200_000 });
    expect(limited.a.ok).toBe(false);
    expect(limited.a.errorMessage).toMatch(/decompresses to more than .*MAX_DECOMPRESSED_BYTES = 200000/);
    expect(limited.a.errorMessage).toBe(limited.b.errorMessage!);
    expect(openTempFiles()).toEqual([]);
    expect(tempNames()).toEqual([]);
  }, 60_000);

  test("rows that stop the stripes (an invalid row under 'fail') are read again by one worker: the same failure, no temp file", async () => {
    const req = await stored("fail.csv.gz", gzipSync(csv(20_000)), { ...MAPPINGS, validations: { onInvalidRow: "fail" } });
    const r = await bothWays(req);
    expect(r.a.ok).toBe(false);
    expect(r.a.errorMessage).toBe(r.b.errorMessage!);
    expect(r.a.counts).toEqual(r.b.counts);
    expect(r.a.errorMessage).toMatch(/onInvalidRow is 'fail'/);
    expect(openTempFiles()).toEqual([]);
  }, 60_000);

  test("an aborted run closes the temp file", async () => {
    const req = await stored("abort.csv.gz", gzipSync(csv(200_000)));
    const pool = createEnginePool({ size: 2, minSplitBytes: 1000, stripeBytes: 64 * 1024 });
    try {
      const ac = new AbortController();
      const running = pool.process(req, ac.signal);
      for (let i = 0; i < 500 && openTempFiles().length === 0; i++) await Bun.sleep(2);
      expect(openTempFiles().length).toBeGreaterThan(0);
      ac.abort(new Error("stop"));
      await expect(running).rejects.toThrow();
      for (let i = 0; i < 100 && openTempFiles().length > 0; i++) await Bun.sleep(10);
      expect(openTempFiles()).toEqual([]);
      expect(await t.store.exists(req.processedKey)).toBe(false);
    } finally {
      await pool.close();
    }
  }, 60_000);
});
