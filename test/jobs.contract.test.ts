import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { type Database, openSqlite } from "../db/client";
import { createJobQueue, type QueueOptions } from "../src/jobs";
import type { CronSpec, JobContext, JobDefinition, JobQueue } from "../src/jobs/port";
import { createLogger } from "../src/logger";
import { freshDatabase } from "./helpers/database";
import { gate, JobWorkerProcess, waitFor } from "./helpers/jobs";

/**
 * One contract, both queues: the SQLite jobs table always, graphile-worker
 * on Postgres when TEST_DATABASE_URL is set. Leases, polls and backoff are
 * tens of milliseconds here; production values are seconds.
 */
type Dialect = "sqlite" | "pg";
const dialects: Dialect[] = process.env.TEST_DATABASE_URL ? ["sqlite", "pg"] : ["sqlite"];

interface Ctx {
  dialect: Dialect;
  db: Database;
  /** SQLite file or Postgres URL, for child processes. */
  target: string;
  drop(): Promise<void>;
}

async function open(dialect: Dialect): Promise<Ctx> {
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "fps-jobs-"));
    const target = join(dir, "service.db");
    const db = openSqlite(target);
    return {
      dialect,
      db,
      target,
      async drop() {
        await db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const t = await freshDatabase();
  return { dialect, db: t.db, target: t.url!, drop: t.drop };
}

const LEASE_MS = 300;
const RETRY = { baseMs: 40, maxMs: 400 };
const log = createLogger(process.env.JOBS_TEST_LOG ?? "silent");

const ctxs = new Map<Dialect, Ctx>();
const queues: JobQueue[] = [];
const children: JobWorkerProcess[] = [];

function makeQueue(ctx: Ctx, opts: Partial<QueueOptions> = {}): Promise<JobQueue> {
  return createJobQueue({ db: ctx.db, log, concurrency: 4, leaseMs: LEASE_MS, pollMs: 25, retry: RETRY, ...opts }).then((q) => {
    queues.push(q);
    return q;
  });
}

interface Call {
  payload: unknown;
  attempt: number;
  jobId: string;
  at: number;
}

/** A definition that records every attempt and give-up; `behave` decides what an attempt does. */
function recorder(name: string, behave?: (payload: any, ctx: JobContext) => Promise<void>, parse?: (p: unknown) => unknown) {
  const calls: Call[] = [];
  const gaveUp: { payload: unknown; error: Error }[] = [];
  let parsed = 0;
  const def: JobDefinition<any> = {
    name,
    parse(p) {
      parsed++;
      return parse ? parse(p) : p;
    },
    async handle(payload, ctx) {
      calls.push({ payload, attempt: ctx.attempt, jobId: ctx.jobId, at: Date.now() });
      await behave?.(payload, ctx);
    },
    async onGiveUp(payload, error) {
      gaveUp.push({ payload, error });
    },
  };
  return { def, calls, gaveUp, parsedCount: () => parsed };
}

let seq = 0;
const uniqueName = (what: string) => `${what}-${++seq}`;

// Cron slots are a minute apart: each database's schedule is started first
// and checked last, so the other tests run while the minute turns.
const cronRuns = new Map<Dialect, number[]>();
const cronQueues: JobQueue[] = [];
const cronSpec = (d: Dialect): CronSpec => ({ name: `minutely-${d}`, cron: "* * * * *", job: `tick-${d}`, payload: { from: "cron" } });

beforeAll(async () => {
  for (const d of dialects) {
    const ctx = await open(d);
    ctxs.set(d, ctx);
    const runs: number[] = [];
    cronRuns.set(d, runs);
    const tick: JobDefinition<{ from: string }> = {
      name: `tick-${d}`,
      parse: (p) => p as { from: string },
      async handle(p) {
        expect(p).toEqual({ from: "cron" });
        runs.push(Date.now());
      },
    };
    // Two instances on one database: each slot must still fire once.
    for (let i = 0; i < 2; i++) {
      const q = await createJobQueue({ db: ctx.db, log, concurrency: 1, leaseMs: LEASE_MS, pollMs: 25, retry: RETRY });
      await q.start([tick], [cronSpec(d)]);
      cronQueues.push(q);
    }
  }
});

afterEach(async () => {
  for (const c of children.splice(0)) await c.kill();
  await Promise.all(queues.splice(0).map((q) => q.stop(200)));
});

afterAll(async () => {
  await Promise.all(cronQueues.map((q) => q.stop(200)));
  for (const ctx of ctxs.values()) await ctx.drop();
});

for (const dialect of dialects) {
  const ctx = () => ctxs.get(dialect)!;

  describe(`job queue contract (${dialect})`, () => {
    test("the queue is the one for the database", async () => {
      expect((await makeQueue(ctx())).kind).toBe(dialect);
    });

    test("enqueue is part of the caller's transaction: committed runs, rolled back never does", async () => {
      const q = await makeQueue(ctx());
      const r = recorder(uniqueName("tx"));
      // Enqueued before any worker runs: the job waits in the database.
      await ctx().db.tx((w) => q.enqueue(w, { name: r.def.name, payload: { n: 1 } }));
      await expect(
        ctx().db.tx(async (w) => {
          await q.enqueue(w, { name: r.def.name, payload: { n: 2 } });
          throw new Error("the caller's write failed");
        }),
      ).rejects.toThrow("the caller's write failed");
      await q.start([r.def]);
      await waitFor("the committed job", () => r.calls.length === 1);
      await q.add({ name: r.def.name, payload: { n: 3 } });
      await waitFor("the job added on its own", () => r.calls.length === 2);
      await Bun.sleep(150);
      expect(r.calls.map((c) => c.payload)).toEqual([{ n: 1 }, { n: 3 }]);
      expect(r.calls.every((c) => c.attempt === 1)).toBe(true);
    });

    test("a failing job is retried with exponential backoff up to its limit, then given up once with the last error", async () => {
      const q = await makeQueue(ctx());
      const r = recorder(uniqueName("fail"), async (_p, c) => {
        throw new Error(`upstream refused (attempt ${c.attempt})`);
      });
      await q.start([r.def]);
      await q.add({ name: r.def.name, payload: { file: "a.csv" }, maxAttempts: 4 });
      await waitFor("the give-up", () => r.gaveUp.length === 1);
      expect(r.calls.map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
      // Equal jitter: the wait after failed attempt k is at least half of base * 2^(k-1).
      const gaps = r.calls.slice(1).map((c, i) => c.at - r.calls[i]!.at);
      gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual((RETRY.baseMs * 2 ** i) / 2 - 5));
      expect(r.gaveUp[0]!.payload).toEqual({ file: "a.csv" });
      expect(r.gaveUp[0]!.error.message).toBe("upstream refused (attempt 4)");
      await Bun.sleep(300);
      expect(r.calls).toHaveLength(4);
      expect(r.gaveUp).toHaveLength(1);
    });

    test("a job that fails once and then succeeds is not given up", async () => {
      const q = await makeQueue(ctx());
      const r = recorder(uniqueName("flaky"), async (_p, c) => {
        if (c.attempt === 1) throw new Error("transient");
      });
      await q.start([r.def]);
      await q.add({ name: r.def.name, payload: {}, maxAttempts: 3 });
      await waitFor("the second attempt", () => r.calls.length === 2);
      await Bun.sleep(200);
      expect(r.calls.map((c) => c.attempt)).toEqual([1, 2]);
      expect(r.gaveUp).toHaveLength(0);
    });

    test("a payload that does not parse fails the job at once: no handler, no retries, no onGiveUp", async () => {
      const q = await makeQueue(ctx());
      const r = recorder(uniqueName("parse"), undefined, (p) => {
        if (typeof (p as { runId?: unknown }).runId !== "string") throw new Error("runId: expected string");
        return p;
      });
      await q.start([r.def]);
      await q.add({ name: r.def.name, payload: { runId: 42 }, key: "parse-key", maxAttempts: 5 });
      await waitFor("the parse", () => r.parsedCount() === 1);
      await Bun.sleep(300);
      expect(r.parsedCount()).toBe(1);
      expect(r.calls).toHaveLength(0);
      expect(r.gaveUp).toHaveLength(0);
      // The failed job released its key.
      await q.add({ name: r.def.name, payload: { runId: "run_1" }, key: "parse-key" });
      await waitFor("the good job", () => r.calls.length === 1);
    });

    test("a scheduled job waits for its runAt", async () => {
      const q = await makeQueue(ctx());
      const r = recorder(uniqueName("later"));
      await q.start([r.def]);
      const runAt = new Date(Date.now() + 400);
      await q.add({ name: r.def.name, payload: "later", runAt });
      await q.add({ name: r.def.name, payload: "now" });
      await waitFor("both jobs", () => r.calls.length === 2);
      expect(r.calls.map((c) => c.payload)).toEqual(["now", "later"]);
      expect(r.calls[1]!.at).toBeGreaterThanOrEqual(runAt.getTime() - 5);
    });

    test("a key de-duplicates while its job waits or runs, and is free again once the job is done", async () => {
      const q = await makeQueue(ctx());
      const held = gate();
      const r = recorder(uniqueName("dedupe"), async (p) => {
        if (p === 1) await held.opened;
      });
      await q.add({ name: r.def.name, payload: 1, key: "run_1" });
      await q.add({ name: r.def.name, payload: 2, key: "run_1" }); // waiting: no-op
      await q.add({ name: r.def.name, payload: "other key", key: "run_2" });
      await q.start([r.def]);
      await waitFor("the first job to start", () => r.calls.some((c) => c.payload === 1));
      await q.add({ name: r.def.name, payload: 3, key: "run_1" }); // running: no-op
      held.open();
      await waitFor("both keys", () => r.calls.length === 2);
      await Bun.sleep(200);
      await q.add({ name: r.def.name, payload: 4, key: "run_1" }); // done: runs
      await waitFor("the key to be usable again", () => r.calls.length === 3);
      await Bun.sleep(100);
      expect(r.calls.map((c) => c.payload).sort()).toEqual([1, 4, "other key"].sort());
    });

    test("no more jobs run at once than the concurrency", async () => {
      const q = await makeQueue(ctx(), { concurrency: 2 });
      let now = 0;
      let peak = 0;
      const r = recorder(uniqueName("conc"), async () => {
        peak = Math.max(peak, ++now);
        await Bun.sleep(60);
        now--;
      });
      await q.start([r.def]);
      await ctx().db.tx(async (w) => {
        for (let i = 0; i < 6; i++) await q.enqueue(w, { name: r.def.name, payload: i });
      });
      await waitFor("six jobs", () => r.calls.length === 6 && now === 0);
      expect(peak).toBe(2);
    });

    test("a worker that dies holding a job loses it after the lease; the job runs again (at least once)", async () => {
      const prefix = uniqueName("crash") + "-";
      const child = await JobWorkerProcess.start({ dialect, target: ctx().target, prefix, worker: "doomed", concurrency: 1, leaseMs: LEASE_MS });
      children.push(child);
      const q = await makeQueue(ctx());
      await q.add({ name: `${prefix}hang`, payload: { n: 7 }, maxAttempts: 3 });
      const started = await child.waitForLine((l) => l.startsWith("started "));
      expect(started.split(" ")[2]).toBe("1");
      await child.kill();
      const r = recorder(`${prefix}hang`);
      await q.start([r.def]);
      await waitFor("the job to be taken back and run", () => r.calls.length === 1, 5_000);
      expect(r.calls[0]).toMatchObject({ payload: { n: 7 }, attempt: 2, jobId: started.split(" ")[1] });
      await Bun.sleep(200);
      expect(r.calls).toHaveLength(1);
      expect(r.gaveUp).toHaveLength(0);
    });

    test("a worker that dies on the last attempt: the job is given up, not run again", async () => {
      const prefix = uniqueName("crash-last") + "-";
      const child = await JobWorkerProcess.start({ dialect, target: ctx().target, prefix, worker: "doomed", concurrency: 1, leaseMs: LEASE_MS });
      children.push(child);
      const q = await makeQueue(ctx());
      await q.add({ name: `${prefix}hang`, payload: { n: 8 }, maxAttempts: 1, key: "last" });
      await child.waitForLine((l) => l.startsWith("started "));
      await child.kill();
      const r = recorder(`${prefix}hang`);
      await q.start([r.def]);
      await waitFor("the give-up", () => r.gaveUp.length === 1, 5_000);
      expect(r.calls).toHaveLength(0);
      expect(r.gaveUp[0]!.payload).toEqual({ n: 8 });
      expect(r.gaveUp[0]!.error.message).toMatch(/attempt 1 of 1 stopped before finishing/);
      await Bun.sleep(200);
      expect(r.gaveUp).toHaveLength(1);
      // The given-up job freed its key.
      await q.add({ name: `${prefix}hang`, payload: { n: 9 }, key: "last" });
      await waitFor("the next job with the key", () => r.calls.length === 1);
    });

    test("stop lets a job in hand finish, and it does not run again", async () => {
      const a = await makeQueue(ctx());
      let finished = 0;
      const name = uniqueName("finish");
      const r = recorder(name, async () => {
        await Bun.sleep(150);
        finished++;
      });
      await a.start([r.def]);
      await a.add({ name, payload: "x" });
      await waitFor("the job to start", () => r.calls.length === 1);
      await a.stop(5_000);
      expect(finished).toBe(1);
      const b = await makeQueue(ctx());
      const again = recorder(name);
      await b.start([again.def]);
      await Bun.sleep(300);
      expect(again.calls).toHaveLength(0);
    });

    test("stop hands back a job that does not finish in time (aborting it); another instance takes it without losing an attempt", async () => {
      const a = await makeQueue(ctx());
      const name = uniqueName("slow");
      let aborted: unknown = null;
      const r = recorder(name, (_p, c) => {
        c.signal.addEventListener("abort", () => (aborted = c.signal.reason));
        return new Promise(() => {}); // ignores the abort, like a stuck call
      });
      await a.start([r.def]);
      await a.add({ name, payload: { n: 1 }, maxAttempts: 2 });
      await waitFor("the job to start", () => r.calls.length === 1);
      const t0 = Date.now();
      await a.stop(100);
      expect(Date.now() - t0).toBeLessThan(3_000);
      expect(String(aborted)).toMatch(/handed back/);
      const b = await makeQueue(ctx());
      const other = recorder(name);
      await b.start([other.def]);
      await waitFor("the other instance to run it", () => other.calls.length === 1, 3_000);
      expect(other.calls[0]).toMatchObject({ payload: { n: 1 }, attempt: 1, jobId: r.calls[0]!.jobId });
    });

    test("start refuses a cron that is not five fields or names a job without a definition", async () => {
      const q = await makeQueue(ctx());
      const r = recorder(uniqueName("cron-check"));
      await expect(q.start([r.def], [{ name: "bad", cron: "*/5 * * *", job: r.def.name }])).rejects.toThrow(/five fields/);
      const q2 = await makeQueue(ctx());
      await expect(q2.start([r.def], [{ name: "orphan", cron: "* * * * *", job: "nobody" }])).rejects.toThrow(/no definition/);
    });

    if (dialect === "pg") test("a worker whose liveness connection drops abandons the jobs in hand and takes its lock again", async () => {
      const a = await makeQueue(ctx());
      const name = uniqueName("liveness");
      let reason: unknown = null;
      const r = recorder(name, (_p, c) => new Promise<void>((done) => c.signal.addEventListener("abort", () => done(void (reason = c.signal.reason)))));
      await a.start([r.def]);
      await a.add({ name, payload: 1, maxAttempts: 3 });
      await waitFor("the job to start", () => r.calls.length === 1);
      const sql = postgres(ctx().target, { max: 1, onnotice: () => {} });
      try {
        // The pool's liveness lock: (namespace, hashtext(pool id)), the pool id being the job's locked_by.
        const lockOf = (jobId: string) => sql<{ pid: number }[]>`
          select l.pid from pg_locks l, graphile_worker.jobs j
          where j.id = ${jobId}::bigint and l.locktype = 'advisory' and l.granted and l.classid = 741329021
            and l.objid::bigint = (hashtext(j.locked_by)::bigint + 4294967296) % 4294967296`;
        const [holder] = await lockOf(r.calls[0]!.jobId);
        expect(holder).toBeDefined();
        const [pool] = await sql<{ locked_by: string }[]>`select locked_by from graphile_worker.jobs where id = ${r.calls[0]!.jobId}::bigint`;
        await sql`select pg_terminate_backend(${holder!.pid}::int)`;
        await waitFor("the attempt to be abandoned", () => reason !== null, 3_000);
        expect(String(reason)).toMatch(/liveness lost/);
        await waitFor("the lock to be taken again", async () => {
          const [row] = await sql<{ c: number }[]>`
            select count(*)::int as c from pg_locks where locktype = 'advisory' and granted and classid = 741329021
              and objid::bigint = (hashtext(${pool!.locked_by})::bigint + 4294967296) % 4294967296 and pid <> ${holder!.pid}::int`;
          return row!.c === 1;
        }, 3_000);
      } finally {
        await sql.end();
      }
    });

    if (dialect === "pg") test(
      "two processes on one Postgres share 200 jobs: each runs exactly once, never twice at the same time",
      async () => {
        const sql = postgres(ctx().target, { max: 1, onnotice: () => {} });
        try {
          await sql`create table job_runs (id serial primary key, n int not null, worker text not null, started_at timestamptz not null, ended_at timestamptz)`;
          const prefix = uniqueName("share") + "-";
          const cfg = { dialect, target: ctx().target, prefix, concurrency: 4, leaseMs: LEASE_MS } as const;
          const [a, b] = await Promise.all([
            JobWorkerProcess.start({ ...cfg, worker: "a" }),
            JobWorkerProcess.start({ ...cfg, worker: "b" }),
          ]);
          children.push(a, b);
          const q = await makeQueue(ctx()); // only enqueues
          await ctx().db.tx(async (w) => {
            for (let n = 0; n < 200; n++) await q.enqueue(w, { name: `${prefix}record`, payload: { n } });
          });
          const finished = async () => (await sql<{ c: number }[]>`select count(*)::int as c from job_runs where ended_at is not null`)[0]!.c;
          await waitFor("200 finished runs", async () => (await finished()) >= 200, 60_000);
          await Bun.sleep(300);
          const perJob = await sql<{ n: number; runs: number }[]>`select n, count(*)::int as runs from job_runs group by n order by n`;
          expect(perJob).toHaveLength(200);
          expect(perJob.every((r) => r.runs === 1)).toBe(true);
          const overlapping = await sql`
            select 1 from job_runs x join job_runs y on x.n = y.n and x.id < y.id
            where x.started_at < coalesce(y.ended_at, 'infinity') and y.started_at < coalesce(x.ended_at, 'infinity')`;
          expect(overlapping).toHaveLength(0);
          const perWorker = await sql<{ worker: string; runs: number }[]>`select worker, count(*)::int as runs from job_runs group by worker order by worker`;
          expect(perWorker.map((r) => r.worker)).toEqual(["a", "b"]);
          expect(perWorker.every((r) => r.runs > 0)).toBe(true);
          const [left] = await sql<{ c: number }[]>`select count(*)::int as c from graphile_worker.jobs where task_identifier = ${`${prefix}record`}`;
          expect(left!.c).toBe(0);
          expect(await a.stop()).toBe(0);
          expect(await b.stop()).toBe(0);
          children.length = 0;
        } finally {
          await sql.end();
        }
      },
      90_000,
    );
  });
}

describe("cron (started with the file, checked last)", () => {
  for (const dialect of dialects) {
    test(
      `${dialect}: a five-field cron fires at its slot, once per slot across two instances`,
      async () => {
        const runs = cronRuns.get(dialect)!;
        await waitFor("the first minute slot", () => runs.length > 0, 70_000);
        await Bun.sleep(1_500);
        const slots = runs.map((t) => Math.floor(t / 60_000));
        expect(new Set(slots).size).toBe(slots.length);
        // It ran at the slot, not some time later.
        for (const t of runs) expect(t % 60_000).toBeLessThan(5_000);
      },
      80_000,
    );
  }
});
