import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readdirSync, readFileSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { SMTPServer } from "smtp-server";
import { AppError } from "../src/domain/errors";
import { jobDefinitions } from "../src/jobs/definitions";
import { deliverToCustomerSftp, deliveryKey } from "../src/services/run-path/process/delivery/customer-sftp";
import { pollConnection, schedulePolls } from "../src/services/run-path/doors/sftp-poll";
import { RUN_JOB } from "../src/services/runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { createPipeline, ITEMS_CSV } from "./helpers/runs";
import { outboundPipeline, startUpload, uploadAll } from "./helpers/outbound";
import { KEY_PASSPHRASE, type Sshd, startSshd } from "./helpers/sshd";

/*
 * Customer (self-hosted) SFTP against a real OpenSSH server on loopback
 * (test/helpers/sshd.ts): polling, pickup exactly once, growing and
 * temporary files, the processed folder, delivery, and test-connection.
 */

const SETTLE_MS = 30_000;
let sshd: Sshd;
let h: Harness;
let ws: TestWorkspace;
let n = 0;

beforeAll(async () => {
  sshd = await startSshd();
  h = await Harness.start({
    startJobs: false,
    // The hosted check probes SFTP_HOST:SFTP_PORT; here an OpenSSH server stands where the service's own would listen.
    env: { PUBLIC_URL: "http://127.0.0.1:3000", SFTP_PORT: String(sshd.port), SFTP_POLL_SETTLE_SECONDS: String(SETTLE_MS / 1000) },
  });
  ws = await h.workspace();
}, 60_000);

afterAll(async () => {
  await h?.close();
  await sshd?.stop();
}, 30_000);

type Auth = { sftpPassword?: string; sftpPrivateKey?: string; sftpPassphrase?: string };

/** A self-hosted connection whose root is a fresh folder on the test server. */
async function connection(opts: { auth?: Auth; processedFolder?: string; folders?: boolean; port?: number; username?: string } = {}) {
  const dir = `c${++n}`;
  sshd.mkdir(dir);
  if (opts.folders !== false) {
    sshd.mkdir(`${dir}/inbound`);
    sshd.mkdir(`${dir}/outbound`);
  }
  const c = await h.ok(ws, "POST", "/connections", {
    name: `Customer box ${n}`,
    type: "SFTP",
    useHostedSFTP: false,
    sftpUsername: opts.username ?? sshd.user,
    ...(opts.auth ?? { sftpPrivateKey: sshd.privateKey }),
    sftpServer: {
      host: sshd.host,
      port: opts.port ?? sshd.port,
      rootDirectory: join(sshd.root, dir),
      inboundFolder: "/inbound",
      outboundFolder: "/outbound",
      ...(opts.processedFolder ? { processedFolder: opts.processedFolder } : {}),
    },
  });
  return { id: c.id as string, dir, remote: (p: string) => join(sshd.root, dir, p), connection: c };
}

const poll = (connectionId: string) => pollConnection(h.svc, { workspaceId: ws.workspaceId, connectionId });

async function runsOf(connectionId: string) {
  const r = h.svc.db.t.pipelineRuns;
  return h.svc.db.read.select().from(r).where(eq(r.connectionId, connectionId));
}

async function original(key: string): Promise<string> {
  const body = await h.svc.storage.get(key);
  return body ? new Response(body).text() : "";
}

async function pickups(connectionId: string) {
  const t = h.svc.db.t.sftpPickups;
  return h.svc.db.read.select().from(t).where(eq(t.connectionId, connectionId));
}

const statuses = (r: { checks: { name: string; status: string }[] }) => r.checks.map((c) => [c.name, c.status]);
const check = (r: { checks: { name: string; status: string; message: string; durationMs?: number }[] }, name: string) => r.checks.find((c) => c.name === name);

describe("processedFolder on the server object", () => {
  test("optional, normalised like the other folders, cleared with null; the inbound folder itself or '..' is a 400 naming it", async () => {
    const base = { type: "SFTP", useHostedSFTP: false, sftpUsername: "u", sftpPassword: "p" };
    const c = await h.ok(ws, "POST", "/connections", { ...base, name: `Processed ${++n}`, sftpServer: { host: "sftp.example.com", processedFolder: "in/done/" } });
    expect(c.sftpServer).toMatchObject({ inboundFolder: "/inbound", processedFolder: "/in/done" });
    const s = h.svc.db.t.sftpServers;
    expect((await h.svc.db.read.select().from(s).where(eq(s.id, c.sftpServerDataId)))[0]!.processedFolder).toBe("/in/done");
    const cleared = await h.ok(ws, "PATCH", `/connections/${c.id}`, { name: c.name, sftpServer: { host: "sftp.example.com", processedFolder: null } });
    expect(cleared.sftpServer).not.toHaveProperty("processedFolder");

    for (const [processedFolder, message] of [
      ["/inbound", "sftpServer.processedFolder: must differ from inboundFolder"],
      ["../up", "sftpServer.processedFolder: must not contain '..'"],
    ]) {
      const r = await h.api(ws, "POST", "/connections", { ...base, name: `Bad processed ${++n}`, sftpServer: { host: "sftp.example.com", processedFolder } });
      expect(r.status).toBe(400);
      expect(r.body.message).toContain(message);
    }
    expect((await h.api(ws, "GET", `/connections?name=${encodeURIComponent("Bad processed")}`)).body).toEqual([]);
  });
});

describe("polling a customer's inbound folder", () => {
  test("a new file is seen first, taken once unchanged for the settle time (one run per active pipeline), and never taken again", async () => {
    const c = await connection();
    await createPipeline(h, ws, { connectionId: c.id });
    await createPipeline(h, ws, { connectionId: c.id });
    sshd.write(`${c.dir}/inbound/orders.csv`, ITEMS_CSV);

    const first = await poll(c.id);
    expect(first.error).toBeNull();
    expect(first.listed).toBe(1);
    expect(first.waiting).toEqual([c.remote("inbound/orders.csv")]);
    expect(first.taken).toEqual([]);

    h.clock.advance(SETTLE_MS - 1000);
    expect((await poll(c.id)).taken).toEqual([]);
    expect(await runsOf(c.id)).toHaveLength(0);

    h.clock.advance(1000);
    const takenAt = h.clock.now();
    const third = await poll(c.id);
    expect(third.taken).toHaveLength(1);
    expect(third.taken[0]).toMatchObject({ path: c.remote("inbound/orders.csv"), outcome: "started" });
    const runs = await runsOf(c.id);
    expect(runs).toHaveLength(2);
    expect(third.taken[0]!.runIds.sort()).toEqual(runs.map((r) => r.id).sort());
    for (const run of runs) {
      expect(run.source).toBe("sftp");
      expect(run.filename).toBe("orders.csv");
      expect(run.path).toBe(c.remote("inbound/orders.csv"));
      expect(await original(run.originalKey)).toBe(ITEMS_CSV);
      expect(run.metadata).toMatchObject({ arrival: { host: sshd.host, remotePath: c.remote("inbound/orders.csv"), remoteSize: ITEMS_CSV.length } });
    }
    const a = h.svc.db.t.arrivals;
    const arrivals = await h.svc.db.read.select().from(a).where(eq(a.connectionId, c.id));
    expect(arrivals.map((x) => [x.transport, x.outcome, x.filename])).toEqual([["sftp_poll", "started", "orders.csv"]]);

    // Without a processed folder the file stays where it is, and is remembered.
    h.clock.advance(SETTLE_MS * 3);
    const later = await poll(c.id);
    expect(later.taken).toEqual([]);
    expect(later.waiting).toEqual([]);
    expect(await runsOf(c.id)).toHaveLength(2);
    expect(existsSync(c.remote("inbound/orders.csv"))).toBe(true);
    const [row] = await pickups(c.id);
    expect(row).toMatchObject({ remotePath: c.remote("inbound/orders.csv"), size: ITEMS_CSV.length, outcome: "started", movedTo: null });
    expect(row!.takenAt).toEqual(takenAt);
    expect(row!.runIds.sort()).toEqual(runs.map((r) => r.id).sort());
  });

  test("a file that is still growing is left for a later poll, and taken whole once it stops changing", async () => {
    const c = await connection();
    await createPipeline(h, ws, { connectionId: c.id });
    const path = `${c.dir}/inbound/big.csv`;
    sshd.write(path, "SKU,Qty,Name\na-1,3,Bolt\n", { mtime: 1_790_000_000 });
    expect((await poll(c.id)).waiting).toHaveLength(1);

    h.clock.advance(SETTLE_MS);
    sshd.write(path, ITEMS_CSV, { mtime: 1_790_000_000 }); // same mtime second, new size: still being written
    const grew = await poll(c.id);
    expect(grew.taken).toEqual([]);
    expect(grew.waiting).toEqual([c.remote("inbound/big.csv")]);
    expect(await runsOf(c.id)).toHaveLength(0);
    // The first version is forgotten; only the current one is remembered.
    expect((await pickups(c.id)).map((p) => p.size)).toEqual([ITEMS_CSV.length]);

    h.clock.advance(SETTLE_MS);
    sshd.write(path, ITEMS_CSV, { mtime: 1_790_000_060 }); // same size, touched again
    expect((await poll(c.id)).taken).toEqual([]);

    h.clock.advance(SETTLE_MS);
    const done = await poll(c.id);
    expect(done.taken).toHaveLength(1);
    const [run] = await runsOf(c.id);
    expect(await original(run!.originalKey)).toBe(ITEMS_CSV);
  });

  test("temporary names are skipped; a file renamed to its final name is taken", async () => {
    const c = await connection();
    await createPipeline(h, ws, { connectionId: c.id });
    for (const name of [".hidden.csv", "items.csv.part", "items.csv.filepart", "items.tmp", "upload.crdownload"]) sshd.write(`${c.dir}/inbound/${name}`, ITEMS_CSV);
    sshd.mkdir(`${c.dir}/inbound/archive`); // folders are not files
    const first = await poll(c.id);
    h.clock.advance(SETTLE_MS);
    const second = await poll(c.id);
    expect(second.taken).toEqual([]);
    expect(second.skipped.map((s) => s.path.split("/").pop()).sort()).toEqual([".hidden.csv", "items.csv.filepart", "items.csv.part", "items.tmp", "upload.crdownload"]);
    expect(second.skipped[0]!.reason).toContain("temporary name");
    expect(first.listed).toBe(5);
    expect(await pickups(c.id)).toEqual([]);
    expect(await runsOf(c.id)).toHaveLength(0);

    sshd.write(`${c.dir}/inbound/items.csv`, ITEMS_CSV);
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    expect((await poll(c.id)).taken.map((t) => t.path)).toEqual([c.remote("inbound/items.csv")]);
  });

  test("with a processed folder, taken files are moved there (created when missing); a name already there is kept and the newcomer gets a suffix", async () => {
    const c = await connection({ processedFolder: "/done" });
    expect(c.connection.sftpServer.processedFolder).toBe("/done");
    await createPipeline(h, ws, { connectionId: c.id });
    sshd.write(`${c.dir}/inbound/a.csv`, ITEMS_CSV);
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    const taken = await poll(c.id);
    expect(taken.moved).toEqual([{ path: c.remote("inbound/a.csv"), to: c.remote("done/a.csv") }]);
    expect(existsSync(c.remote("inbound/a.csv"))).toBe(false);
    expect(readFileSync(c.remote("done/a.csv"), "utf8")).toBe(ITEMS_CSV);
    expect((await pickups(c.id))[0]).toMatchObject({ movedTo: c.remote("done/a.csv"), moveError: null });

    const second = "SKU,Qty,Name\nz-9,1,Spring\n";
    sshd.write(`${c.dir}/inbound/a.csv`, second);
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    const again = await poll(c.id);
    expect(again.taken).toHaveLength(1);
    expect(again.moved).toHaveLength(1);
    const to = again.moved[0]!.to;
    expect(to).toMatch(/\/done\/a\.\d{8}T\d{6}Z\.[a-z0-9]{6}\.csv$/);
    expect(readFileSync(to, "utf8")).toBe(second);
    expect(readFileSync(c.remote("done/a.csv"), "utf8")).toBe(ITEMS_CSV);
    expect(readdirSync(c.remote("inbound"))).toEqual([]);
    expect(await runsOf(c.id)).toHaveLength(2);
  });

  test("a taken file that cannot be moved (inbound folder not writable) is not taken again; the move error is recorded", async () => {
    const c = await connection({ processedFolder: "/done" });
    await createPipeline(h, ws, { connectionId: c.id });
    sshd.mkdir(`${c.dir}/done`);
    sshd.write(`${c.dir}/inbound/locked.csv`, ITEMS_CSV);
    sshd.mkdir(`${c.dir}/inbound`, 0o555);
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    const r = await poll(c.id);
    expect(r.taken).toHaveLength(1);
    expect(r.moveFailed[0]!.reason).toMatch(/permission denied/i);
    expect((await pickups(c.id))[0]!.moveError).toMatch(/permission denied/i);
    h.clock.advance(SETTLE_MS);
    const again = await poll(c.id);
    expect(again.taken).toEqual([]);
    expect(again.moveFailed).toHaveLength(1); // tried again, still refused
    expect(await runsOf(c.id)).toHaveLength(1);
    sshd.mkdir(`${c.dir}/inbound`, 0o755);
    const fixed = await poll(c.id);
    expect(fixed.moved).toEqual([{ path: c.remote("inbound/locked.csv"), to: c.remote("done/locked.csv") }]);
    expect(await runsOf(c.id)).toHaveLength(1);
  });

  test("a crash after the runs started but before the pickup was recorded starts nothing twice", async () => {
    const c = await connection();
    await createPipeline(h, ws, { connectionId: c.id });
    sshd.write(`${c.dir}/inbound/once.csv`, ITEMS_CSV);
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    const r = await poll(c.id);
    const runIds = r.taken[0]!.runIds;
    // Undo the record as if the process died right after starting the runs.
    const t = h.svc.db.t.sftpPickups;
    await h.svc.db.tx((w) => w.update(t).set({ takenAt: null, outcome: null, runIds: [] }).where(eq(t.connectionId, c.id)));
    const again = await poll(c.id);
    expect(again.taken[0]!.runIds).toEqual(runIds);
    expect(await runsOf(c.id)).toHaveLength(1);
  });

  test("a file that changes while it is read starts no run; its new version is taken later", async () => {
    const c = await connection();
    await createPipeline(h, ws, { connectionId: c.id });
    const path = `${c.dir}/inbound/moving.csv`;
    sshd.write(path, ITEMS_CSV, { mtime: 1_790_000_000 });
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    // The real client, except that the customer appends to the file the moment it is opened for reading.
    const real = h.svc.sftp;
    h.svc.sftp = {
      probe: real.probe,
      async login(l) {
        const r = await real.login(l);
        if (!r.ok) return r;
        const session = new Proxy(r.session, {
          get(target, key) {
            if (key === "read") {
              return (p: string) => {
                appendFileSync(p, "d-4,1,Nail\n");
                return target.read(p);
              };
            }
            const v = Reflect.get(target, key);
            return typeof v === "function" ? v.bind(target) : v;
          },
        });
        return { ...r, session };
      },
    };
    let r: Awaited<ReturnType<typeof poll>>;
    try {
      r = await poll(c.id);
    } finally {
      h.svc.sftp = real;
    }
    expect(r.taken).toEqual([]);
    expect(r.failed).toEqual([{ path: c.remote("inbound/moving.csv"), reason: expect.stringContaining("changed while it was read") }]);
    expect(await runsOf(c.id)).toHaveLength(0);
    expect((await pickups(c.id)).every((p) => p.takenAt === null)).toBe(true);

    const grown = `${ITEMS_CSV}d-4,1,Nail\n`;
    expect(readFileSync(c.remote("inbound/moving.csv"), "utf8")).toBe(grown);
    expect((await poll(c.id)).waiting).toEqual([c.remote("inbound/moving.csv")]);
    h.clock.advance(SETTLE_MS);
    expect((await poll(c.id)).taken).toHaveLength(1);
    const [run] = await runsOf(c.id);
    expect(await original(run!.originalKey)).toBe(grown);
  });

  test("a poll stopped by shutdown before its login finished reports it and takes nothing", async () => {
    const c = await connection();
    const r = await pollConnection(h.svc, { workspaceId: ws.workspaceId, connectionId: c.id, signal: AbortSignal.abort() });
    expect(r.error).toContain("stopped before the login finished");
  });

  test("a connection without an active inbound pipeline is not scheduled, and a file seen meanwhile waits for one", async () => {
    const c = await connection();
    const { pipeline } = await createPipeline(h, ws, { connectionId: c.id, isActive: false });
    sshd.write(`${c.dir}/inbound/later.csv`, ITEMS_CSV);
    await poll(c.id);
    h.clock.advance(SETTLE_MS);
    const r = await poll(c.id);
    expect(r.taken).toEqual([]);
    expect(r.skipped[0]!.reason).toContain("no active inbound pipeline");
    await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { name: pipeline.name, isActive: true });
    expect((await poll(c.id)).taken).toHaveLength(1);
  });

  test("an unreachable server or a refused login is reported by the poll, not thrown", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    const down = await connection({ port });
    expect((await poll(down.id)).error).toMatch(/^cannot connect to 127\.0\.0\.1:\d+: ECONNREFUSED/);
    const refused = await connection({ auth: { sftpPassword: "wrong" } });
    expect((await poll(refused.id)).error).toContain(`login as '${sshd.user}' on 127.0.0.1:${sshd.port} failed`);
    const noFolder = await connection({ folders: false });
    expect((await poll(noFolder.id)).error).toMatch(/cannot list .*\/inbound: .*No such file/);
  });

  test("schedulePolls enqueues a poll per self-hosted connection with an active inbound pipeline, and the job takes files", async () => {
    const defs = jobDefinitions(h.svc);
    expect(defs.crons).toContainEqual({ name: "sftp.poll-all", cron: "* * * * *", job: "sftp.poll-all" });
    const c = await connection();
    await createPipeline(h, ws, { connectionId: c.id });
    sshd.write(`${c.dir}/inbound/queued.csv`, ITEMS_CSV);
    await h.svc.queue.start(defs.definitions);
    // Stopped before the test ends: a queue left claiming jobs would race the tests after it that run a job's
    // handler themselves (on Postgres NOTIFY wakes it at once, and the outbound run below was processed twice).
    try {
      expect(await schedulePolls(h.svc)).toBeGreaterThanOrEqual(1);
      await waitFor("the poll job to see the file", async () => (await pickups(c.id)).length === 1, 20_000);
      h.clock.advance(SETTLE_MS);
      // While the first poll is still in hand its key holds: scheduling again is a no-op until it ends.
      await waitFor(
        "a later poll job to take the file",
        async () => {
          await schedulePolls(h.svc);
          await Bun.sleep(50);
          return (await pickups(c.id))[0]?.takenAt != null;
        },
        20_000,
      );
      expect(await runsOf(c.id)).toHaveLength(1);
    } finally {
      await h.svc.queue.stop();
    }
  }, 60_000);
});

describe("delivery to the customer's outbound folder", () => {
  test("the file is written under a temporary name and renamed to its final name once complete", async () => {
    const c = await connection();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let sentFirst!: () => void;
    const firstSent = new Promise<void>((r) => (sentFirst = r));
    const body = async function* () {
      yield new TextEncoder().encode("sku,qty\n");
      sentFirst();
      await held;
      yield new TextEncoder().encode("A-1,3\n");
    };
    const delivering = deliverToCustomerSftp(h.svc, { workspaceId: ws.workspaceId, connectionId: c.id, filename: "report.csv", deliveryId: "run_1", openBody: async () => body() });
    await firstSent;
    await waitFor("the temporary file", () => readdirSync(c.remote("outbound")).length === 1);
    const during = readdirSync(c.remote("outbound"));
    expect(during[0]).toMatch(/^\.fps\.report\.csv\.[0-9a-f]{8}\.[0-9a-f]{8}\.part$/);
    release();
    expect(await delivering).toEqual({ remotePath: c.remote("outbound/report.csv") });
    expect(readdirSync(c.remote("outbound"))).toEqual(["report.csv"]);
    expect(readFileSync(c.remote("outbound/report.csv"), "utf8")).toBe("sku,qty\nA-1,3\n");

    // Delivered again under the same name: the new file replaces the old one.
    await deliverToCustomerSftp(h.svc, { workspaceId: ws.workspaceId, connectionId: c.id, filename: "report.csv", deliveryId: "run_2", openBody: async () => "sku,qty\nB-2,5\n" });
    expect(readFileSync(c.remote("outbound/report.csv"), "utf8")).toBe("sku,qty\nB-2,5\n");
    expect(readdirSync(c.remote("outbound"))).toEqual(["report.csv"]);
  });

  test("a delivery removes what an interrupted attempt of it left, and other deliveries' temporary files once an hour old; nothing else", async () => {
    const c = await connection();
    const outbound = c.remote("outbound");
    // The first attempt is cut after its first bytes (as if its process had died): its temporary file stays.
    let sentFirst!: () => void;
    const firstSent = new Promise<void>((r) => (sentFirst = r));
    let unblock!: () => void;
    const blocked = new Promise<void>((r) => (unblock = r));
    const stalled = async function* () {
      yield new TextEncoder().encode("sku,qty\nA-1,");
      sentFirst();
      await blocked;
      yield new TextEncoder().encode("3\n");
    };
    const delivery = { workspaceId: ws.workspaceId, connectionId: c.id, filename: "report.csv", deliveryId: "run_interrupted" };
    const first = deliverToCustomerSftp(h.svc, { ...delivery, openBody: async () => stalled() }).catch((e: Error) => e);
    await firstSent;
    await waitFor("the first attempt's temporary file", () => readdirSync(outbound).length === 1);
    const firstTemp = readdirSync(outbound)[0]!;
    expect(firstTemp).toStartWith(`.fps.report.csv.${deliveryKey("run_interrupted", "report.csv")}.`);

    // Beside it: another delivery's temporary files, one being written now and one left two hours ago, and files that are not ours.
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000);
    const live = `.fps.other.csv.${deliveryKey("run_live", "other.csv")}.0123abcd.part`;
    const old = `.fps.old.csv.${deliveryKey("run_old", "old.csv")}.4567cdef.part`;
    const notOurs = [".report.csv.89abcdef.part", "report.csv.part", ".fps.report.csv.part", "partner-notes.txt"];
    for (const name of [live, old, ...notOurs]) sshd.write(`${c.dir}/outbound/${name}`, "half,a\n");
    for (const name of [old, ...notOurs]) utimesSync(join(outbound, name), hoursAgo(2), hoursAgo(2));

    // The retry of the same delivery: the file arrives whole, the first attempt's leftover and the old one are removed.
    await deliverToCustomerSftp(h.svc, { ...delivery, openBody: async () => "sku,qty\nA-1,3\n" });
    expect(readFileSync(join(outbound, "report.csv"), "utf8")).toBe("sku,qty\nA-1,3\n");
    expect(readdirSync(outbound).sort()).toEqual(["report.csv", live, ...notOurs].sort());

    // Were the first attempt alive after all, finishing it changes nothing the customer sees: its file is gone, its rename fails.
    unblock();
    expect(String(await first)).toMatch(new RegExp(`rename .*/outbound/${firstTemp.replace(/\./g, "\\.")} to .*/outbound/report\\.csv: No such file`));
    expect(readFileSync(join(outbound, "report.csv"), "utf8")).toBe("sku,qty\nA-1,3\n");
    expect(readdirSync(outbound).sort()).toEqual(["report.csv", live, ...notOurs].sort());
  });

  test("a missing outbound folder is created; a large file arrives intact", async () => {
    const c = await connection({ folders: false });
    const big = new Uint8Array(5 * 1024 * 1024 + 123).map((_, i) => (i * 31) % 251);
    await deliverToCustomerSftp(h.svc, { workspaceId: ws.workspaceId, connectionId: c.id, filename: "big.bin", deliveryId: "run_3", openBody: async () => big });
    expect(new Uint8Array(readFileSync(c.remote("outbound/big.bin")))).toEqual(big);
  });

  test("an unwritable outbound folder or a refused login fails with the reason and leaves nothing behind", async () => {
    const c = await connection();
    sshd.mkdir(`${c.dir}/outbound`, 0o555);
    const denied = deliverToCustomerSftp(h.svc, { workspaceId: ws.workspaceId, connectionId: c.id, filename: "r.csv", deliveryId: "run_4", openBody: async () => "x\n" });
    await expect(denied).rejects.toThrow(/writing .*\/outbound\/r\.csv: .*Permission denied/i);
    expect(readdirSync(c.remote("outbound"))).toEqual([]);

    const wrong = await connection({ auth: { sftpPassword: "not-the-password" } });
    await expect(
      deliverToCustomerSftp(h.svc, { workspaceId: ws.workspaceId, connectionId: wrong.id, filename: "r.csv", deliveryId: "run_5", openBody: async () => "x\n" }),
    ).rejects.toThrow(/login as 'fpstest' .* failed: the server refused the credentials/);
  });

  test("an outbound run of a self-hosted connection is processed and delivered to the customer's outbound folder", async () => {
    const c = await connection();
    const { pipeline } = await outboundPipeline(h, ws, { connectionId: c.id, name: `Out ${n}` });
    const up = await startUpload(h, ws, { connectionName: c.connection.name, pipelineName: pipeline.name, totalParts: 1, outputFilename: "to-customer.csv" });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    const { runId } = await uploadAll(h, ws, up.body.uploadId, [[{ SKU: "s-1", Qty: "2", Name: " Sent " }]]);
    const runJob = jobDefinitions(h.svc).definitions.find((d) => d.name === RUN_JOB)!;
    await runJob.handle(runJob.parse({ runId, attempt: 1 }), { jobId: "job_t", attempt: 1, maxAttempts: 1, signal: new AbortController().signal });
    const run = await h.ok(ws, "GET", `/pipeline-runs/${runId}`);
    expect(run.status, JSON.stringify(run)).toBe("delivered");
    expect(run.metadata.delivery).toMatchObject({ kind: "sftp", path: c.remote("outbound/to-customer.csv"), filename: "to-customer.csv" });
    expect(readdirSync(c.remote("outbound"))).toEqual(["to-customer.csv"]);
    expect(readFileSync(c.remote("outbound/to-customer.csv"), "utf8")).toContain("S-1");
  });

  test("a hosted connection is not a customer server", async () => {
    const hosted = await h.ok(ws, "POST", "/connections", { name: `Hosted ${++n}`, sftpPassword: "pw" });
    const e = await deliverToCustomerSftp(h.svc, { workspaceId: ws.workspaceId, connectionId: hosted.id, filename: "r.csv", deliveryId: "run_6", openBody: async () => "x" }).catch((x) => x);
    expect(e).toBeInstanceOf(AppError);
    expect(e.code).toBe("conflict");
  });
});

describe("test-connection", () => {
  const testIt = async (id: string) => {
    const r = await h.api(ws, "POST", `/connections/${id}/test-connection`);
    expect(r.status).toBe(200);
    return r.body;
  };

  test("a working server: reachable, logged in, inbound readable, outbound writable (the probe file is removed)", async () => {
    const c = await connection();
    sshd.write(`${c.dir}/inbound/waiting.csv`, ITEMS_CSV);
    const r = await testIt(c.id);
    expect(statuses(r)).toEqual([
      ["tcp_connect", "passed"],
      ["ssh_handshake", "passed"],
      ["credentials", "passed"],
      ["login", "passed"],
      ["inbound_folder", "passed"],
      ["outbound_folder", "passed"],
    ]);
    expect(r.ok).toBe(true);
    expect(check(r, "ssh_handshake")!.message).toContain("SSH-2.0-OpenSSH");
    expect(check(r, "login")!.message).toMatch(/logged in as 'fpstest' and opened SFTP \(host key SHA256:[A-Za-z0-9+/]{43}\)/);
    expect(check(r, "inbound_folder")!.message).toContain("1 entries");
    expect(readdirSync(c.remote("outbound"))).toEqual([]);
    for (const name of ["tcp_connect", "login", "inbound_folder", "outbound_folder"]) expect(typeof check(r, name)!.durationMs).toBe("number");
  });

  const logins: [string, () => Auth][] = [
    ["a password", () => ({ sftpPassword: sshd.password })],
    ["an OpenSSH ed25519 key", () => ({ sftpPrivateKey: sshd.privateKey })],
    ["an OpenSSH ed25519 key with a passphrase", () => ({ sftpPrivateKey: sshd.encryptedKey, sftpPassphrase: KEY_PASSPHRASE })],
    ["a PEM RSA key with a passphrase", () => ({ sftpPrivateKey: sshd.encryptedPemKey, sftpPassphrase: KEY_PASSPHRASE })],
  ];
  for (const [what, auth] of logins) {
    test(`logs in with ${what}`, async () => {
      const c = await connection({ auth: auth() });
      const r = await testIt(c.id);
      expect(check(r, "login")).toMatchObject({ status: "passed" });
      expect(r.ok).toBe(true);
    });
  }

  test("a server that takes passwords only through keyboard-interactive (PAM) gets the password there", async () => {
    const pam = await startSshd({ config: ["UsePAM yes", "PasswordAuthentication no", "KbdInteractiveAuthentication yes"] });
    try {
      const ok = await connection({ port: pam.port, auth: { sftpPassword: pam.password } });
      const r = await testIt(ok.id);
      expect(check(r, "login")).toMatchObject({ status: "passed" });
      expect(pam.log()).toContain(`Accepted keyboard-interactive/pam for ${pam.user}`);
      const wrong = await connection({ port: pam.port, auth: { sftpPassword: "not-it" } });
      expect(check(await testIt(wrong.id), "login")!.message).toContain("the server refused the credentials");
    } finally {
      await pam.stop();
    }
  }, 30_000);

  test("wrong credentials: the login fails with the reason, the folders are not checked", async () => {
    for (const auth of [
      { sftpPassword: "wrong-password" },
      { sftpPrivateKey: sshd.encryptedKey, sftpPassphrase: "wrong passphrase" },
      { sftpPrivateKey: sshd.encryptedKey },
    ]) {
      const c = await connection({ auth });
      const r = await testIt(c.id);
      expect(statuses(r)).toEqual([
        ["tcp_connect", "passed"],
        ["ssh_handshake", "passed"],
        ["credentials", "passed"],
        ["login", "failed"],
        ["inbound_folder", "skipped"],
        ["outbound_folder", "skipped"],
      ]);
      expect(r.ok).toBe(false);
      expect(check(r, "login")!.message).toMatch(auth.sftpPassword ? /the server refused the credentials/ : /the private key cannot be used/);
    }
    const nobody = await connection({ username: "nobody-here", auth: { sftpPassword: "x" } });
    expect(check(await testIt(nobody.id), "login")!.status).toBe("failed");
  });

  test("a server that allows only chacha20-poly1305 cannot be reached from Bun: the login fails naming the ciphers offered", async () => {
    const chachaOnly = await startSshd({ config: ["Ciphers chacha20-poly1305@openssh.com"] });
    try {
      const c = await connection({ port: chachaOnly.port });
      const r = await testIt(c.id);
      expect(check(r, "ssh_handshake")!.status).toBe("passed");
      expect(check(r, "login")).toMatchObject({ status: "failed" });
      expect(check(r, "login")!.message).toContain("SSH key exchange failed");
      expect(check(r, "login")!.message).toContain("aes128-gcm@openssh.com");
    } finally {
      await chachaOnly.stop();
    }
  }, 30_000);

  test("an unreachable host: tcp_connect fails, login and folders are skipped", async () => {
    const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = s.port;
    s.stop(true);
    const c = await connection({ port });
    const r = await testIt(c.id);
    expect(statuses(r)).toEqual([
      ["tcp_connect", "failed"],
      ["ssh_handshake", "skipped"],
      ["credentials", "passed"],
      ["login", "skipped"],
      ["inbound_folder", "skipped"],
      ["outbound_folder", "skipped"],
    ]);
    expect(check(r, "tcp_connect")!.message).toContain("ECONNREFUSED");
  });

  test("an unwritable outbound folder and a missing inbound folder fail their checks", async () => {
    const c = await connection();
    sshd.mkdir(`${c.dir}/outbound`, 0o555);
    const r = await testIt(c.id);
    expect(check(r, "outbound_folder")).toMatchObject({ status: "failed" });
    expect(check(r, "outbound_folder")!.message).toMatch(/is not writable: .*permission denied/i);
    expect(check(r, "inbound_folder")!.status).toBe("passed");
    expect(r.ok).toBe(false);

    const missing = await connection({ folders: false });
    const m = await testIt(missing.id);
    expect(check(m, "inbound_folder")).toMatchObject({ status: "failed" });
    expect(check(m, "inbound_folder")!.message).toMatch(/cannot be listed: .*no such file/i);
    // The outbound folder is created, as a delivery would.
    expect(check(m, "outbound_folder")!.message).toContain("did not exist and was created");
  });

  test("a processed folder: the inbound folder must be writable too, and the processed folder is checked", async () => {
    const c = await connection({ processedFolder: "/done" });
    const r = await testIt(c.id);
    expect(statuses(r).slice(3)).toEqual([
      ["login", "passed"],
      ["inbound_folder", "passed"],
      ["outbound_folder", "passed"],
      ["processed_folder", "passed"],
    ]);
    expect(check(r, "inbound_folder")!.message).toContain("and writable");
    sshd.mkdir(`${c.dir}/inbound`, 0o555);
    const ro = await testIt(c.id);
    expect(check(ro, "inbound_folder")).toMatchObject({ status: "failed" });
    expect(check(ro, "inbound_folder")!.message).toContain("cannot be moved");
  });

  test("hosted: the service's own SFTP address is probed (SFTP_HOST or PUBLIC_URL's host, SFTP_PORT)", async () => {
    const c = await h.ok(ws, "POST", "/connections", { name: `Hosted probe ${++n}`, sftpPassword: "pw" });
    const up = await testIt(c.id);
    expect(statuses(up)).toEqual([
      ["hosted_account", "passed"],
      ["credentials", "passed"],
      ["hosted_server", "passed"],
    ]);
    expect(check(up, "hosted_server")!.message).toContain(`answers at 127.0.0.1:${sshd.port}`);
    const saved = h.svc.settings.sftpPort;
    const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    h.svc.settings.sftpPort = s.port;
    s.stop(true);
    try {
      const down = await testIt(c.id);
      expect(check(down, "hosted_server")).toMatchObject({ status: "failed" });
      expect(check(down, "hosted_server")!.message).toContain("does not answer");
      expect(down.ok).toBe(false);
    } finally {
      h.svc.settings.sftpPort = saved;
    }
  });

  test("EMAIL: the service's SMTP receiver is probed for its greeting", async () => {
    const c = await h.ok(ws, "POST", "/connections", { name: `Inbox ${++n}`, type: "EMAIL", emailAllowedFormats: ["csv"] });
    const smtp = new SMTPServer({ authOptional: true, disabledCommands: ["STARTTLS"], banner: "fps test receiver" });
    await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", () => r()));
    const saved = h.svc.settings.smtpPort;
    h.svc.settings.smtpPort = (smtp.server.address() as { port: number }).port;
    try {
      const up = await testIt(c.id);
      expect(statuses(up)).toEqual([
        ["inbound_address", "passed"],
        ["allowed_formats", "passed"],
        ["mail_receiver", "passed"],
      ]);
      expect(check(up, "mail_receiver")!.message).toContain("fps test receiver");
    } finally {
      await new Promise<void>((r) => smtp.close(() => r()));
    }
    const down = await testIt(c.id);
    expect(check(down, "mail_receiver")).toMatchObject({ status: "failed" });
    expect(down.ok).toBe(false);
    h.svc.settings.smtpPort = saved;
  });
});
