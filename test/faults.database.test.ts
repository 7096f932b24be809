import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database as BunSqlite } from "bun:sqlite";
import { dirname, join } from "node:path";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { checkPatchedPostgres } from "../db/pg-library";
import { silenceBound } from "../db/pg-silence";
import { secondInstance } from "./helpers/instances";
import { testDialect } from "./helpers/database";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { JobWorkerProcess, waitFor } from "./helpers/jobs";
import { createPipeline, type PipelineFixture, startUpload, waitForRun } from "./helpers/runs";
import { TcpProxy } from "./helpers/tcp-proxy";

/**
 * Processing survives database faults (docs/reliability.md): on Postgres
 * through a TCP proxy that refuses, resets and stalls connections; on
 * SQLite a database another process holds locked beyond the busy timeout.
 * Every run ends completed, without restarting the service.
 */
let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;
let proxy: TcpProxy | null = null;

const csv = (n: number) => `SKU,Qty,Name\nsku-${n},${n},Item ${n}\n`;

async function uploadMany(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await startUpload(h, ws, fx.pipeline.id, csv(i), `f${i}.csv`)).id);
  return ids;
}

async function allCompleted(ids: string[], timeoutMs: number): Promise<void> {
  for (const id of ids) {
    const run = await waitForRun(h, ws, id, ["completed", "failed"], { timeoutMs });
    expect(run.status, `run ${id}: ${JSON.stringify(run)}`).toBe("completed");
  }
}

beforeAll(async () => {
  if (testDialect() === "pg") {
    const admin = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await TcpProxy.start({ host: admin.hostname, port: Number(admin.port || 5432) });
  }
  h = await Harness.start({ dbVia: proxy ? (url) => proxy!.via(url) : undefined, logLevel: process.env.FAULT_LOG ?? "silent" });
  ws = await h.workspace();
  fx = await createPipeline(h, ws);
}, 60_000);

afterAll(async () => {
  proxy?.restore();
  await h.close();
  await proxy?.close();
}, 30_000);

if (testDialect() === "pg") {
  describe("Postgres behind a proxy that fails", () => {
    test("20 uploads, then 3 s of refused connections: every run completes with no restart, and the runner says so", async () => {
      const ids = await uploadMany(20);
      proxy!.refuse();
      await Bun.sleep(3_000);
      proxy!.restore();
      await allCompleted(ids, 60_000);
      await waitFor("the queue running again", () => h.svc.queue.health().state === "running", 30_000);
    }, 120_000);

    test("a stall of 3 s: every run completes once traffic passes again", async () => {
      const ids = await uploadMany(10);
      proxy!.stall();
      await Bun.sleep(3_000);
      proxy!.restore();
      await allCompleted(ids, 60_000);
    }, 120_000);
  });

  /**
   * Live connections reset: a service process of its own behind a second proxy, since bun test fails on any
   * unhandled rejection in its own process, handled or not; the uploads come from this harness, which does not
   * process jobs and reaches Postgres directly.
   */
  describe("Postgres connections reset under a running service", () => {
    let direct: Harness;
    let dws: TestWorkspace;
    let dfx: PipelineFixture;
    let resets: TcpProxy;
    const databaseUrl = () => direct.childEnv().DATABASE_URL!;

    beforeAll(async () => {
      const admin = new URL(process.env.TEST_DATABASE_URL!);
      resets = await TcpProxy.start({ host: admin.hostname, port: Number(admin.port || 5432) });
      direct = await Harness.start({ startJobs: false });
      dws = await direct.workspace();
      dfx = await createPipeline(direct, dws);
    }, 60_000);

    afterAll(async () => {
      await direct.close();
      await resets.close();
    }, 30_000);

    test("reset 10 times while 20 runs are processed: the process stays up, every run completes, no job is left locked", async () => {
      const service = await secondInstance(direct, { DATABASE_URL: resets.via(databaseUrl()), LOG_LEVEL: process.env.FAULT_LOG ?? "silent" });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 20; i++) ids.push((await startUpload(direct, dws, dfx.pipeline.id, csv(i), `r${i}.csv`)).id);
        for (let i = 0; i < 10; i++) {
          resets.reset();
          await Bun.sleep(250);
        }
        for (const id of ids) {
          const run = await waitForRun(direct, dws, id, ["completed", "failed"], { timeoutMs: 90_000 });
          expect(run.status, `run ${id}: ${JSON.stringify(run)}`).toBe("completed");
        }
        expect(service.proc.exitCode).toBeNull();
        const sql = postgres(databaseUrl(), { max: 1, onnotice: () => {} });
        try {
          const held = async () => Number((await sql`select count(*) as n from graphile_worker.jobs where locked_at is not null or run_at <= now()`)[0]?.n);
          await waitFor("no job locked or due", async () => (await held()) === 0, 30_000);
        } finally {
          await sql.end({ timeout: 5 });
        }
        const ready = await fetch(`${service.url}/readyz`);
        expect(ready.status).toBe(200);
      } finally {
        await service.stop();
      }
    }, 180_000);

    test("a long job whose worker loses its liveness connection more times than it has attempts completes, each loss not counted", async () => {
      const prefix = `liveness-${Date.now().toString(36)}-`;
      const worker = await JobWorkerProcess.start({ dialect: "pg", target: resets.via(databaseUrl()), prefix, worker: "w", concurrency: 1, leaseMs: 30_000 });
      try {
        await direct.svc.queue.add({ name: `${prefix}long`, payload: { n: 1, ms: 1_500 }, maxAttempts: 3 });
        const started = () => worker.lines.filter((l) => l.startsWith("started "));
        for (let i = 1; i <= 5; i++) {
          await waitFor(`start ${i} of the job`, () => started().length >= i, 20_000);
          await Bun.sleep(200);
          resets.reset();
        }
        const done = await worker.waitForLine((l) => l.startsWith("done "), 30_000);
        expect(started().length).toBeGreaterThan(5);
        // Every start is the first attempt: the five losses were the database's fault, not the job's.
        expect(started().map((l) => l.split(" ")[2])).toEqual(started().map(() => "1"));
        expect(done.split(" ")[2]).toBe("1");
        const sql = postgres(databaseUrl(), { max: 1, onnotice: () => {} });
        try {
          await waitFor("the job completed and gone", async () => (await sql`select 1 from graphile_worker.jobs where task_identifier = ${`${prefix}long`}`).length === 0, 10_000);
        } finally {
          await sql.end({ timeout: 5 });
        }
      } finally {
        await worker.stop();
      }
    }, 120_000);

    /** A client of one connection through the reset proxy whose socket calls `onError` first when it fails (before postgres.js hears of it). */
    const clientWith = (onError: (socket: Socket, sql: postgres.Sql) => void, extra: Record<string, unknown> = {}) => {
      const options = {
        max: 1,
        fetch_types: false,
        onnotice: () => {},
        ...extra,
        // The socket postgres.js would make itself, with one listener of the test's.
        socket: (o: { host: string[]; port: number[] }) => {
          const s = Object.assign(connect(Number(o.port[0]), o.host[0]!), { host: o.host[0], port: o.port[0] });
          s.once("error", () => onError(s, sql));
          return s;
        },
      };
      const sql: postgres.Sql = postgres(resets.via(databaseUrl()), options);
      return sql;
    };
    const settled = (q: Promise<unknown>) =>
      Promise.race([
        q.then(
          () => "answered",
          (e: { code?: string }) => String(e.code),
        ),
        Bun.sleep(3_000).then(() => "hung"),
      ]);

    test("a query sent between a failed socket's error and its close is failed, never left waiting (patched postgres.js)", async () => {
      for (let round = 0; round < 5; round++) {
        let straggler: Promise<string> | null = null;
        // Sent from the error's own turn, once postgres.js has heard of the error and before the close.
        const sql = clientWith((_s, sql) => queueMicrotask(() => (straggler = settled(sql`select 2 as x`))));
        await sql`select 1`;
        resets.reset();
        await waitFor("the reset seen", () => straggler !== null, 5_000);
        expect(["ECONNRESET", "CONNECTION_CLOSED"]).toContain(await straggler!);
        await sql.end({ timeout: 0.1 }).catch(() => undefined);
      }
    }, 60_000);

    test("a connection closed with a write still scheduled writes again once reconnected (patched postgres.js)", async () => {
      for (let round = 0; round < 3; round++) {
        let first: Promise<string> | null = null;
        // A query written in the error's turn (its write waits for the next turn), then the close before that turn comes.
        const sql = clientWith(
          (s, sql) => {
            first = settled(sql`select 2 as x`);
            process.nextTick(() => s.emit("close", true));
          },
          { connect_timeout: 2 },
        );
        await sql`select 1`;
        resets.reset();
        await waitFor("the reset seen", () => first !== null, 5_000);
        expect(await first!).not.toBe("hung");
        expect(await settled(sql`select 3 as x`)).toBe("answered");
        await sql.end({ timeout: 0.1 }).catch(() => undefined);
      }
    }, 60_000);

    test("a transaction whose connection is reset mid-query fails within a second (its rollback too), and the process stays up", async () => {
      const sql = postgres(resets.via(databaseUrl()), { max: 1, onnotice: () => {} });
      try {
        for (let round = 0; round < 5; round++) {
          const started = performance.now();
          const outcome = await settled(
            sql.begin(async (tx) => {
              await tx`select 1`;
              setTimeout(() => resets.reset(), 20);
              await tx`select pg_sleep(0.5)`;
              await tx`select 2`;
            }),
          );
          expect(outcome).not.toBe("hung");
          expect(outcome).not.toBe("answered");
          expect(performance.now() - started).toBeLessThan(1_500);
          expect((await sql`select 3 as x`)[0]?.x).toBe(3);
        }
      } finally {
        await sql.end({ timeout: 1 }).catch(() => undefined);
      }
    }, 60_000);

    test("a query whose connection goes silent fails after DATABASE_STALL_TIMEOUT_SECONDS; answers slower than that but not silent, and idle connections, are kept", async () => {
      const bounded = postgres(resets.via(databaseUrl()), { max: 1, onnotice: () => {}, socket: silenceBound(1_000) } as postgres.Options<{}>);
      const bare = postgres(resets.via(databaseUrl()), { max: 1, onnotice: () => {} });
      try {
        const pid = async (sql: postgres.Sql) => Number((await sql`select pg_backend_pid() as pid`)[0]!.pid);
        const first = await pid(bounded);
        await pid(bare);
        // Idle for twice the bound: not cut.
        await Bun.sleep(2_000);
        expect(await pid(bounded)).toBe(first);
        // Rows that keep coming for longer than the bound, each within it (a cursor of one row at a time): not cut.
        let rows = 0;
        await bounded`select pg_sleep(0.4), g from generate_series(1, 4) g`.cursor(1, async () => void rows++);
        expect(rows).toBe(4);
        expect(await pid(bounded)).toBe(first);
        // A stalled connection: the bounded client's query fails within the bound (plus a tick), the bare one's waits.
        resets.stall();
        const started = performance.now();
        let boundedMs = 0;
        const [withBound, without] = await Promise.all([
          settled(bounded`select 1`).then((r) => ((boundedMs = performance.now() - started), r)),
          settled(bare`select 1`),
        ]);
        expect(withBound).toBe("ETIMEDOUT");
        expect(boundedMs).toBeGreaterThan(900);
        expect(boundedMs).toBeLessThan(2_000);
        expect(without).toBe("hung");
        resets.restore();
        expect(await settled(bounded`select 1`)).toBe("answered");
      } finally {
        resets.restore();
        await bounded.end({ timeout: 1 }).catch(() => undefined);
        await bare.end({ timeout: 1 }).catch(() => undefined);
      }
    }, 60_000);

    test("while no connection can be opened, queries waiting for one fail together, not one per further attempt (patched postgres.js)", async () => {
      const sql = postgres(resets.via(databaseUrl()), { max: 1, connect_timeout: 1, onnotice: () => {} });
      resets.stall();
      try {
        const started = performance.now();
        const outcomes = await Promise.all(
          Array.from({ length: 6 }, () => settled(sql`select 1`).then((r) => ({ r, ms: performance.now() - started }))),
        );
        expect(outcomes.map((o) => o.r)).toEqual(outcomes.map(() => expect.stringMatching(/CONNECT_TIMEOUT|CONNECTION_CLOSED/)));
        // One connect timeout (1 s) for all six; one per query would take six.
        expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(2_500);
      } finally {
        resets.restore();
        await sql.end({ timeout: 1 }).catch(() => undefined);
      }
    }, 30_000);

    test("the service refuses to start on a postgres.js without its fixes", () => {
      const dir = mkdtempSync(join(tmpdir(), "fps-pg-library-"));
      try {
        const installed = dirname(fileURLToPath(import.meta.resolve("postgres")));
        expect(() => checkPatchedPostgres(installed)).not.toThrow();
        const source = readFileSync(join(installed, "connection.js"), "utf8");
        const pool = readFileSync(join(installed, "index.js"), "utf8");
        writeFileSync(join(dir, "connection.js"), source.replaceAll("fps:", "upstream:"));
        writeFileSync(join(dir, "index.js"), pool);
        expect(() => checkPatchedPostgres(dir)).toThrow(/patches\/postgres\+3\.4\.9\.patch/);
        // The pool's fix alone missing is refused too.
        writeFileSync(join(dir, "connection.js"), source);
        writeFileSync(join(dir, "index.js"), pool.replaceAll("fps:", "upstream:"));
        expect(() => checkPatchedPostgres(dir)).toThrow(/patches\/postgres\+3\.4\.9\.patch/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    const typeFetch = async (mode: "guard" | "bare") => {
      const sprung = resets.resetOn("pg_catalog.pg_type");
      const child = Bun.spawn([process.execPath, "test/helpers/pg-type-fetch-child.ts", resets.via(databaseUrl()), mode], {
        cwd: join(import.meta.dir, ".."),
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      await sprung;
      return { out, err, code };
    };

    test("a reset during postgres.js's array-type query on a new connection fails that query alone; the process stays up", async () => {
      const { out, err, code } = await typeFetch("guard");
      expect(code, err).toBe(0);
      const result = JSON.parse(out) as { first: string; second: string };
      expect(["ECONNRESET", "CONNECTION_CLOSED", "answered"]).toContain(result.first);
      expect(result.second).toBe("answered");
    }, 30_000);

    test("without the guard the same reset ends the process (the library defect the guard covers)", async () => {
      const { err, code } = await typeFetch("bare");
      expect(code).not.toBe(0);
      expect(err).toContain("ECONNRESET");
    }, 30_000);
  });
} else {
  describe("SQLite held locked by another connection", () => {
    test("locked past the busy timeout while 20 runs are processed: outcomes are written once it is free, and every run completes", async () => {
      const ids = await uploadMany(20);
      const other = new BunSqlite(join(h.dataDir, "service.db"));
      other.exec("BEGIN EXCLUSIVE");
      await Bun.sleep(7_000);
      other.exec("COMMIT");
      other.close();
      await allCompleted(ids, 60_000);
      expect(h.svc.queue.health().state).toBe("running");
    }, 120_000);
  });
}
