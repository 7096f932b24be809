import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listArrivalRows } from "../src/services/arrivals/list-arrivals";
import { spaceKey } from "../src/services/spaces";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, waitForRun } from "./helpers/runs";
import { askpassEnv, type SftpLogin, sftpBatch, sshKeyPair } from "./helpers/sftp";

/**
 * The hosted SFTP server driven by the real OpenSSH `sftp` client over
 * loopback, on the local object store (sftp.s3.test.ts runs the same
 * client against S3). Runs on SQLite and, with TEST_DATABASE_URL, Postgres.
 */
// Each test drives real OpenSSH processes (and some start the service): more than the 5 s default.
setDefaultTimeout(60_000);
let h: Harness;
let port: number;
let ws: TestWorkspace;
let other: TestWorkspace;
let work: string;
let key: { privateKeyFile: string; publicKey: string };
let partner: { id: string };
let pipelineId: string;
const PASSWORD = "correct horse battery staple";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const login = (extra: Partial<SftpLogin> = {}): SftpLogin => ({ port, user: "acme-partner", password: PASSWORD, ...extra });

async function arrivals(connectionId: string, workspaceId = ws.workspaceId) {
  return (await listArrivalRows(h.svc, { workspaceId, connectionId, limit: 100, offset: 0 })).rows;
}

/** Waits until the connection has `n` arrivals (the sftp.arrival job runs after the upload is stored). */
async function waitForArrivals(connectionId: string, n: number) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const rows = await arrivals(connectionId);
    if (rows.length >= n) return rows;
    if (Date.now() > deadline) throw new Error(`expected ${n} arrivals, have ${rows.length}: ${JSON.stringify(rows)}`);
    await Bun.sleep(50);
  }
}

/** Gives queued jobs time to run, so that "nothing started" is not just "not started yet". */
async function settle() {
  await Bun.sleep(400);
}

beforeAll(async () => {
  h = await Harness.start({ env: { SFTP_FAILURE_DELAY_MS: "0" } });
  port = await h.service.sftp.listen(0, "127.0.0.1");
  ws = await h.workspace();
  other = await h.workspace({ name: "Globex" });
  work = mkdtempSync(join(tmpdir(), "fps-sftp-test-"));
  key = await sshKeyPair();
  partner = await h.ok(ws, "POST", "/connections", {
    name: "Acme partner",
    type: "SFTP",
    useHostedSFTP: true,
    sftpUsername: "acme-partner",
    sftpPassword: PASSWORD,
    awsPublicKey: key.publicKey,
  });
  pipelineId = (await createPipeline(h, ws, { connectionId: partner.id })).pipeline.id;
});
afterAll(() => h.close());

describe("login", () => {
  test("with the connection's password: the space shows inbound and outbound", async () => {
    const r = await sftpBatch(login(), ["pwd", "ls -1"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Remote working directory: /\n");
    expect(r.stdout).toContain("inbound\noutbound\n");
  });

  test("connections announce the port the server is bound to", async () => {
    const read = await h.ok(ws, "GET", `/connections/${partner.id}`);
    expect(read.sftpServer).toMatchObject({ hosted: true, port, rootDirectory: "/", inboundFolder: "/inbound", outboundFolder: "/outbound" });
  });

  test("with the connection's public key (awsPublicKey), signature checked", async () => {
    const r = await sftpBatch(login({ password: undefined, identity: key.privateKeyFile }), ["ls -1"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("inbound\noutbound\n");
  });

  test("a wrong password, an unknown user and another key are refused", async () => {
    const wrong = await sftpBatch(login({ password: "guess" }), ["ls"]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("Permission denied");
    const unknown = await sftpBatch(login({ user: "nobody-here" }), ["ls"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("Permission denied");
    const stranger = await sshKeyPair("stranger@example.com");
    const wrongKey = await sftpBatch(login({ password: undefined, identity: stranger.privateKeyFile }), ["ls"]);
    expect(wrongKey.code).not.toBe(0);
    expect(wrongKey.stderr).toContain("Permission denied");
  });

  test("ipWhitelist: a range that does not hold the client refuses it, one that does (CIDR) lets it in", async () => {
    await h.ok(ws, "POST", "/connections", { name: "Fenced", type: "SFTP", sftpUsername: "fenced-partner", sftpPassword: PASSWORD, ipWhitelist: ["10.0.0.0/8", "192.0.2.7"] });
    const refused = await sftpBatch(login({ user: "fenced-partner" }), ["ls"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("Permission denied");
    const open = await h.ok(ws, "POST", "/connections", { name: "Loopback", type: "SFTP", sftpUsername: "loopback-partner", sftpPassword: PASSWORD, ipWhitelist: ["10.0.0.0/8", "127.0.0.0/8"] });
    expect(open.ipWhitelist).toEqual(["10.0.0.0/8", "127.0.0.0/8"]);
    const allowed = await sftpBatch(login({ user: "loopback-partner" }), ["ls -1"]);
    expect(allowed.code).toBe(0);
  });

  test("a self-hosted connection's username is not a hosted login", async () => {
    await h.ok(ws, "POST", "/connections", {
      name: "Own server",
      type: "SFTP",
      useHostedSFTP: false,
      sftpUsername: "own-server-user",
      sftpPassword: PASSWORD,
      sftpServer: { host: "sftp.partner.example", port: 22 },
    });
    const r = await sftpBatch(login({ user: "own-server-user" }), ["ls"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("Permission denied");
  });
});

describe("files", () => {
  test("put, ls and get: the file comes back byte for byte (3 MiB, many requests each way)", async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 123);
    writeFileSync(join(work, "blob.bin"), bytes);
    const r = await sftpBatch(login(), ["cd /outbound", "put blob.bin", "ls -l", "get blob.bin back.bin"], { cwd: work });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/-rw-r--r-- .* 3145851 .* blob\.bin/);
    expect(sha(readFileSync(join(work, "back.bin")))).toBe(sha(bytes));
    // Stored in the connection's space, where the documents API and deliveries see it too.
    const info = await h.svc.storage.stat(spaceKey(ws.workspaceId, partner.id, "outbound/blob.bin"));
    expect(info?.size).toBe(bytes.length);
  });

  test("a resumed download (reget) reads from the offset it stopped at", async () => {
    const bytes = randomBytes(200_000);
    await h.svc.storage.put(spaceKey(ws.workspaceId, partner.id, "outbound/resume.bin"), bytes);
    writeFileSync(join(work, "resume.bin"), bytes.subarray(0, 70_001));
    const r = await sftpBatch(login(), ["reget /outbound/resume.bin resume.bin"], { cwd: work });
    expect(r.code).toBe(0);
    expect(sha(readFileSync(join(work, "resume.bin")))).toBe(sha(bytes));
  });

  test("a resumed upload (reput) keeps the bytes already there and appends the rest", async () => {
    const bytes = randomBytes(150_000);
    await h.svc.storage.put(spaceKey(ws.workspaceId, partner.id, "outbound/partial.bin"), bytes.subarray(0, 40_000));
    writeFileSync(join(work, "partial.bin"), bytes);
    const r = await sftpBatch(login(), ["reput partial.bin /outbound/partial.bin"], { cwd: work });
    expect(r.code).toBe(0);
    const stored = await h.svc.storage.get(spaceKey(ws.workspaceId, partner.id, "outbound/partial.bin"));
    expect(sha(new Uint8Array(await new Response(stored).arrayBuffer()))).toBe(sha(bytes));
  });

  test("mkdir, put into it, rename, rm, rmdir; a non-empty folder is not removed", async () => {
    writeFileSync(join(work, "note.txt"), "hello\n");
    const r = await sftpBatch(
      login(),
      [
        "mkdir /outbound/archive",
        "mkdir /outbound/archive/2026",
        "-rmdir /outbound/archive",
        "put note.txt /outbound/archive/2026/note.txt",
        "rename /outbound/archive/2026/note.txt /outbound/archive/2026/renamed.txt",
        "ls -1 /outbound/archive/2026",
        "rm /outbound/archive/2026/renamed.txt",
        "ls -1 /outbound/archive",
        "rmdir /outbound/archive/2026",
        "rmdir /outbound/archive",
        "ls -1 /outbound",
      ],
      { cwd: work },
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("Failure"); // the rmdir of a folder that is not empty
    const listings = r.stdout.split("sftp> ");
    expect(listings.find((l) => l.startsWith("ls -1 /outbound/archive/2026\n"))).toBe("ls -1 /outbound/archive/2026\n/outbound/archive/2026/renamed.txt\n");
    // The folder stays after its last file is removed (as on a disk), until rmdir.
    expect(listings.find((l) => l.startsWith("ls -1 /outbound/archive\n"))).toBe("ls -1 /outbound/archive\n/outbound/archive/2026\n");
    expect(listings.at(-1)).not.toContain("archive");
  });

  test("inbound and outbound cannot be removed or renamed; the folder marker is never shown or named", async () => {
    const r = await sftpBatch(login(), ["-rmdir /inbound", "-rename /outbound /elsewhere", "-get /inbound/.fps-folder x", "mkdir /emptydir", "ls -la /emptydir", "rmdir /emptydir"], { cwd: work });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('remote rmdir "/inbound": Permission denied');
    expect(r.stderr).toContain('remote rename "/outbound" to "/elsewhere": Permission denied');
    // OpenSSH's get reports any failed lookup as "not found".
    expect(r.stderr).toContain('File "/inbound/.fps-folder" not found.');
    expect(r.stdout.split("sftp> ").find((l) => l.startsWith("ls -la"))).toBe("ls -la /emptydir\n");
  });

  test("writes out of order: a gap is held until it fills; rewriting streamed bytes fails the upload and stores nothing", async () => {
    const { Client } = await import("ssh2");
    const client = new Client();
    await new Promise<void>((resolve, reject) => {
      client.once("ready", () => resolve()).once("error", reject);
      client.connect({ host: "127.0.0.1", port, username: "acme-partner", password: PASSWORD });
    });
    try {
      const sftp = await new Promise<import("ssh2").SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))));
      const open = (path: string, flags: import("ssh2").OpenMode) => new Promise<Buffer>((resolve, reject) => sftp.open(path, flags, (err, hd) => (err ? reject(err) : resolve(hd))));
      const write = (hd: Buffer, data: Buffer, at: number) => new Promise<void>((resolve, reject) => sftp.write(hd, data, 0, data.length, at, (err) => (err ? reject(err) : resolve())));
      const close = (hd: Buffer) => new Promise<void>((resolve, reject) => sftp.close(hd, (err) => (err ? reject(err) : resolve())));
      const [a, b, c] = [randomBytes(40_000), randomBytes(40_000), randomBytes(1234)];

      const ordered = await open("/outbound/shuffled.bin", "w");
      await write(ordered, c, 80_000);
      await write(ordered, b, 40_000);
      await write(ordered, a, 0);
      await close(ordered);
      const stored = await h.svc.storage.get(spaceKey(ws.workspaceId, partner.id, "outbound/shuffled.bin"));
      expect(sha(new Uint8Array(await new Response(stored).arrayBuffer()))).toBe(sha(Buffer.concat([a, b, c])));

      const bad = await open("/outbound/rewritten.bin", "w");
      await write(bad, a, 0);
      const rewrite = await write(bad, b, 10).catch((e) => e);
      expect(rewrite.message).toContain("rewrites bytes already sent");
      expect((await close(bad).catch((e) => e)).message).toContain("rewrites bytes already sent");
      expect(await h.svc.storage.stat(spaceKey(ws.workspaceId, partner.id, "outbound/rewritten.bin"))).toBeNull();

      const gap = await open("/outbound/gap.bin", "w");
      await write(gap, b, 40_000);
      expect((await close(gap).catch((e) => e)).message).toContain("gap at offset 0");
      expect(await h.svc.storage.stat(spaceKey(ws.workspaceId, partner.id, "outbound/gap.bin"))).toBeNull();

      // The append flag writes at the end whatever the offset says.
      const appended = await open("/outbound/shuffled.bin", "a");
      await write(appended, c, 0);
      await close(appended);
      expect((await h.svc.storage.stat(spaceKey(ws.workspaceId, partner.id, "outbound/shuffled.bin")))?.size).toBe(80_000 + 1234 * 2);
    } finally {
      client.end();
    }
  });

  test("outbound deliveries written into the space appear in the outbound folder", async () => {
    await h.svc.storage.put(spaceKey(ws.workspaceId, partner.id, "outbound/result-2026-11-22.csv"), "sku,qty\nA-1,3\n");
    const r = await sftpBatch(login(), ["ls -1 /outbound", "get /outbound/result-2026-11-22.csv"], { cwd: work });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("result-2026-11-22.csv\n");
    expect(readFileSync(join(work, "result-2026-11-22.csv"), "utf8")).toBe("sku,qty\nA-1,3\n");
  });
});

describe("chroot", () => {
  test("paths that leave the space are refused with permission denied", async () => {
    writeFileSync(join(work, "x.txt"), "x");
    const r = await sftpBatch(login(), ["-cd ..", "-cd /inbound/../..", "-get ../../x", "-get /../../etc/passwd", "-put x.txt ../x.txt", "-ls /..", "-mkdir ../up", "pwd"], {
      cwd: work,
    });
    expect(r.code).toBe(0);
    // The client words each failure its own way; every one of the seven failed.
    const lines = r.stderr.trim().split(/\r?\n/);
    expect(lines).toEqual([
      "realpath /..: '/..' leaves your folder",
      "realpath /inbound/../..: '/inbound/../..' leaves your folder",
      'File "/../../x" not found.',
      'File "/../../etc/passwd" not found.',
      'dest open "/../x.txt": Permission denied',
      'Can\'t ls: "/.." not found',
      'remote mkdir "/../up": Permission denied',
    ]);
    expect(r.stdout).toContain("Remote working directory: /\n");
    expect(existsSync(join(work, "passwd"))).toBe(false);
  });

  test("every request naming a path outside the space answers PERMISSION_DENIED (ssh2 client, status codes checked)", async () => {
    const { Client, utils } = await import("ssh2");
    const client = new Client();
    await new Promise<void>((resolve, reject) => {
      client.once("ready", () => resolve()).once("error", reject);
      client.connect({ host: "127.0.0.1", port, username: "acme-partner", password: PASSWORD });
    });
    try {
      const sftp = await new Promise<import("ssh2").SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))));
      const code = (call: (cb: (err: any) => void) => void) => new Promise<number | undefined>((resolve) => call((err) => resolve(err?.code)));
      const DENIED = utils.sftp.STATUS_CODE.PERMISSION_DENIED;
      expect(await code((cb) => sftp.stat("/../../etc/passwd", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.lstat("../x", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.open("/inbound/../../x", "r", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.open("/../x", "w", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.opendir("/..", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.realpath("..", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.rename("/outbound/blob.bin", "/../blob.bin", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.mkdir("/../up", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.rmdir("/..", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.unlink("/../../x", cb))).toBe(DENIED);
      expect(await code((cb) => sftp.setstat("/../x", { mode: 0o600 }, cb))).toBe(DENIED);
      expect(await code((cb) => sftp.stat("/.fps/tmp", cb))).toBe(DENIED);
      // Inside the space the same calls work, and symbolic links are not offered.
      expect(await code((cb) => sftp.stat("/outbound/../inbound", cb))).toBeUndefined();
      expect(await code((cb) => sftp.symlink("/inbound", "/link", cb))).toBe(utils.sftp.STATUS_CODE.OP_UNSUPPORTED);
    } finally {
      client.end();
    }
  });

  test("each connection sees only its own space", async () => {
    await h.svc.storage.put(spaceKey(ws.workspaceId, partner.id, "inbound/secret-of-acme.csv"), ITEMS_CSV);
    const globex = await h.ok(other, "POST", "/connections", { name: "Globex partner", type: "SFTP", sftpUsername: "globex-partner", sftpPassword: PASSWORD });
    const r = await sftpBatch(login({ user: "globex-partner" }), ["ls -1 /inbound", "-get /inbound/secret-of-acme.csv"], { cwd: work });
    expect(r.code).toBe(0);
    expect(r.stdout.split("sftp> ").find((l) => l.startsWith("ls -1"))).toBe("ls -1 /inbound\n");
    expect(r.stderr).toContain('File "/inbound/secret-of-acme.csv" not found.');
    expect(existsSync(join(work, "secret-of-acme.csv"))).toBe(false);
    expect(globex.id).not.toBe(partner.id);
  });
});

describe("uploads into inbound start runs", () => {
  test("a completed upload starts one run per active inbound pipeline, with the file as sent", async () => {
    const second = (await createPipeline(h, ws, { connectionId: partner.id, name: "Second inbound" })).pipeline.id;
    await createPipeline(h, ws, { connectionId: partner.id, name: "Paused", isActive: false });
    writeFileSync(join(work, "orders.csv"), ITEMS_CSV);
    const before = (await arrivals(partner.id)).length;
    const r = await sftpBatch(login(), ["put orders.csv /inbound/orders.csv"], { cwd: work });
    expect(r.code).toBe(0);
    const [arrival] = await waitForArrivals(partner.id, before + 1);
    expect(arrival).toMatchObject({ transport: "sftp", filename: "orders.csv", path: "/inbound/orders.csv", size: ITEMS_CSV.length, outcome: "started" });
    expect(arrival!.runIds).toHaveLength(2);
    const runs = await Promise.all(arrival!.runIds.map((id) => waitForRun(h, ws, id, ["completed", "failed"])));
    expect(runs.map((run) => run.pipelineId).sort()).toEqual([pipelineId, second].sort());
    for (const run of runs) {
      expect(run.status).toBe("completed");
      expect(run).toMatchObject({ filename: "orders.csv", path: "/inbound/orders.csv", size: ITEMS_CSV.length, clientId: partner.id });
      expect(run.metadata).toMatchObject({ source: "sftp", arrival: { username: "acme-partner" } });
    }
    // Deactivated again so later tests count one run per arrival.
    await h.ok(ws, "PATCH", `/pipelines/${second}`, { isActive: false });
  });

  test("a temporary name (.part) starts nothing until it is renamed to its final name", async () => {
    writeFileSync(join(work, "stock.csv"), ITEMS_CSV);
    const before = (await arrivals(partner.id)).length;
    const up = await sftpBatch(login(), ["put stock.csv /inbound/stock.csv.part", "put stock.csv /inbound/.hidden.csv", "put stock.csv /inbound/stock.filepart", "ls -1a /inbound"], { cwd: work });
    expect(up.code).toBe(0);
    expect(up.stdout).toContain("stock.csv.part");
    await settle();
    expect(await arrivals(partner.id)).toHaveLength(before);

    const renamed = await sftpBatch(login(), ["rename /inbound/stock.csv.part /inbound/stock.csv"]);
    expect(renamed.code).toBe(0);
    const [arrival] = await waitForArrivals(partner.id, before + 1);
    expect(arrival).toMatchObject({ filename: "stock.csv", path: "/inbound/stock.csv", outcome: "started" });
    const run = await waitForRun(h, ws, arrival!.runIds[0]!, ["completed", "failed"]);
    expect(run.status).toBe("completed");
  });

  test("uploads outside inbound start nothing; moving a file into inbound does", async () => {
    writeFileSync(join(work, "elsewhere.csv"), ITEMS_CSV);
    const before = (await arrivals(partner.id)).length;
    const r = await sftpBatch(login(), ["put elsewhere.csv /elsewhere.csv", "put elsewhere.csv /outbound/elsewhere.csv"], { cwd: work });
    expect(r.code).toBe(0);
    await settle();
    expect(await arrivals(partner.id)).toHaveLength(before);
    const moved = await sftpBatch(login(), ["rename /elsewhere.csv /inbound/moved-in.csv"]);
    expect(moved.code).toBe(0);
    const [arrival] = await waitForArrivals(partner.id, before + 1);
    expect(arrival).toMatchObject({ filename: "moved-in.csv", outcome: "started" });
  });

  test("an upload cut off before it is closed stores nothing and starts nothing", async () => {
    writeFileSync(join(work, "big.csv"), Buffer.alloc(4 * 1024 * 1024, "a,1\n"));
    const before = (await arrivals(partner.id)).length;
    // 400 Kbit/s: the 4 MiB upload would take over a minute; it is killed after a second.
    const argv = ["sftp", "-l", "400", "-o", "BatchMode=no", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "PubkeyAuthentication=no", "-P", String(port), "-b", "-", "acme-partner@127.0.0.1"];
    const proc = Bun.spawn(argv, { cwd: work, env: askpassEnv(PASSWORD), stdin: new Blob(["put big.csv /inbound/big.csv\n"]), stdout: "ignore", stderr: "ignore" });
    const key = spaceKey(ws.workspaceId, partner.id, "inbound/big.csv");
    await Bun.sleep(1500);
    proc.kill("SIGKILL");
    await proc.exited;
    await settle();
    expect(await h.svc.storage.stat(key)).toBeNull();
    expect(await arrivals(partner.id)).toHaveLength(before);
    // Nor is anything left half-written in the local store's temp area.
    const tmp = join(h.dataDir, "objects", ".fps", "tmp");
    expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
  });

  test("a file for a connection without pipelines is recorded as ignored, never dropped", async () => {
    const idle = await h.ok(ws, "POST", "/connections", { name: "Idle partner", type: "SFTP", sftpUsername: "idle-partner", sftpPassword: PASSWORD });
    writeFileSync(join(work, "lonely.csv"), ITEMS_CSV);
    const r = await sftpBatch(login({ user: "idle-partner" }), ["put lonely.csv /inbound/lonely.csv"], { cwd: work });
    expect(r.code).toBe(0);
    const [arrival] = await waitForArrivals(idle.id, 1);
    expect(arrival).toMatchObject({ filename: "lonely.csv", outcome: "ignored", reason: "the connection has no active inbound pipeline" });
  });
});
