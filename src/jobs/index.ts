import type { Database } from "../../db/client";
import type { Clock } from "../domain/clock";
import type { Logger } from "../logger";
import { defaultRetryPolicy, type RetryPolicy } from "./backoff";
import type { JobQueue } from "./port";
import { sqliteWorkerId } from "./predecessor";
import { SqliteJobQueue } from "./sqlite-queue";

export interface QueueOptions {
  db: Database;
  log: Logger;
  /**
   * Not used for the queue's own timing: leases, backoff and cron slots run
   * on wall-clock time (on Postgres the database's clock), because a lease
   * must expire when real time passes, not when a test moves a clock.
   */
  clock?: Clock;
  /** Jobs in hand at once in this process. */
  concurrency: number;
  /**
   * How long a worker may be silent before its jobs are taken from it. SQLite:
   * the lease a heartbeat renews every third of it. Postgres: how long a job
   * must have been locked by a worker whose liveness lock is gone. Default 30 s.
   */
  leaseMs?: number;
  /** Longest sleep between looks for due jobs when nothing wakes the queue sooner. Default 1 s. */
  pollMs?: number;
  /** Backoff between attempts. Default 5 s doubling up to 15 min, with jitter. */
  retry?: Partial<RetryPolicy>;
}

/** The queue for the configured database: a jobs table on SQLite, graphile-worker on Postgres (docs/decisions/jobs.md). */
export async function createJobQueue(opts: QueueOptions): Promise<JobQueue> {
  const common = {
    db: opts.db,
    log: opts.log.child({ component: "jobs" }),
    concurrency: Math.max(1, opts.concurrency),
    leaseMs: opts.leaseMs ?? 30_000,
    pollMs: opts.pollMs ?? 1_000,
    retry: { ...defaultRetryPolicy, ...opts.retry },
  };
  // graphile-worker and node-postgres are loaded only on Postgres (~3 MB of heap an embedded service never needs).
  if (opts.db.dialect === "pg") return (await import("./pg-queue")).createPgJobQueue(common);
  return new SqliteJobQueue({ ...common, workerId: sqliteWorkerId() });
}

export type { CronSpec, JobContext, JobDefinition, JobQueue, JobSpec } from "./port";
