/**
 * A job-queue process for tests that need a second process or one that
 * dies: `bun test/helpers/job-worker.ts '<json config>'`. It opens the queue
 * on the given database and prints one line per event on stdout
 * (`ready`, `started <jobId> <attempt>`). SIGTERM stops it gracefully.
 *
 * Jobs it knows:
 * - `<prefix>hang`: prints `started` and never finishes (killed with SIGKILL to simulate a crash).
 * - `<prefix>record`: records its start and end into the table `job_runs` (Postgres), taking a few milliseconds.
 * - `<prefix>long`: prints `started`, works for `ms` milliseconds (stopping when aborted), then prints `done <jobId> <attempt>`.
 */
import postgres from "postgres";
import { type Database, openPostgres, openSqlite } from "../../db/client";
import { createJobQueue } from "../../src/jobs";
import type { JobDefinition } from "../../src/jobs/port";
import { createLogger } from "../../src/logger";

export interface JobWorkerConfig {
  dialect: "sqlite" | "pg";
  /** SQLite file path or Postgres URL. */
  target: string;
  prefix: string;
  worker: string;
  concurrency: number;
  leaseMs: number;
}

const cfg = JSON.parse(process.argv[2] ?? "{}") as JobWorkerConfig;
const db: Database = cfg.dialect === "pg" ? await openPostgres(cfg.target, { max: 2 }) : openSqlite(cfg.target);
const sql = cfg.dialect === "pg" ? postgres(cfg.target, { max: cfg.concurrency, onnotice: () => {} }) : null;
const queue = await createJobQueue({
  db,
  log: createLogger(process.env.JOB_WORKER_LOG ?? "silent"),
  concurrency: cfg.concurrency,
  leaseMs: cfg.leaseMs,
  pollMs: 25,
  retry: { baseMs: 20, maxMs: 200 },
});

const say = (line: string) => process.stdout.write(`${line}\n`);
const anyPayload = (p: unknown) => p as { n: number; ms?: number };

const definitions: JobDefinition<{ n: number; ms?: number }>[] = [
  {
    name: `${cfg.prefix}hang`,
    parse: anyPayload,
    async handle(_p, ctx) {
      say(`started ${ctx.jobId} ${ctx.attempt}`);
      await new Promise(() => {});
    },
  },
  {
    name: `${cfg.prefix}long`,
    parse: anyPayload,
    async handle(p, ctx) {
      say(`started ${ctx.jobId} ${ctx.attempt}`);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, p.ms ?? 1_000);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(ctx.signal.reason);
        });
      });
      say(`done ${ctx.jobId} ${ctx.attempt}`);
    },
  },
  {
    name: `${cfg.prefix}record`,
    parse: anyPayload,
    async handle(p) {
      if (!sql) throw new Error("record needs Postgres");
      const [row] = await sql<{ id: number }[]>`
        insert into job_runs (n, worker, started_at) values (${p.n}, ${cfg.worker}, clock_timestamp()) returning id`;
      await new Promise((r) => setTimeout(r, 2 + Math.random() * 8));
      await sql`update job_runs set ended_at = clock_timestamp() where id = ${row!.id}`;
    },
  },
];

await queue.start(definitions);
say("ready");

process.on("SIGTERM", async () => {
  await queue.stop(5_000);
  await sql?.end();
  await db.close();
  process.exit(0);
});
