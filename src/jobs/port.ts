import type { Writer } from "../../db/client";

/**
 * The durable job queue. One port, two implementations: a jobs table on
 * SQLite (the embedded default, one process) and a queue library on Postgres
 * (docs/decisions/jobs.md). test/jobs.contract.test.ts runs against both.
 */
export interface JobSpec<P = unknown> {
  name: string;
  payload: P;
  /** De-duplication: while a job with this key is waiting or running, enqueueing another with it does nothing. */
  key?: string;
  /** Not before this time. */
  runAt?: Date;
  /** Attempts before the job is given up (default 5). */
  maxAttempts?: number;
}

export interface JobContext {
  jobId: string;
  /** 1 on the first attempt. */
  attempt: number;
  maxAttempts: number;
  /** Aborted when the queue stops while the job is in hand. */
  signal: AbortSignal;
}

/**
 * A handler must be idempotent (a job can run again after a crash) and must
 * check its payload: jobs outlive the code that enqueued them. Throwing
 * schedules a retry with exponential backoff until maxAttempts.
 */
export interface JobDefinition<P = unknown> {
  name: string;
  parse(payload: unknown): P;
  handle(payload: P, ctx: JobContext): Promise<void>;
  /** Called once when the last attempt failed; e.g. marks the run failed with an actionable message. */
  onGiveUp?(payload: P, error: Error): Promise<void>;
}

export interface CronSpec {
  /** Unique name of the schedule. */
  name: string;
  /** Five-field cron expression (UTC). */
  cron: string;
  job: string;
  payload?: unknown;
}

/**
 * What /readyz and the logs show of the job runner. `running`: claiming jobs.
 * `restarting`: it stopped for a reason other than `stop()` (the database
 * went away) and is being started again with backoff. `stopped`: never
 * started, or stopped on purpose.
 */
export interface QueueHealth {
  state: "running" | "restarting" | "stopped";
  /** Unplanned restarts since start. */
  restarts: number;
  /** Why it last stopped or failed, when it did. */
  lastError?: string;
  /** When the state last changed. */
  since: Date;
}

export interface JobQueue {
  readonly kind: "sqlite" | "pg";
  /** Enqueues as part of the caller's transaction (`w` from db.tx): a rolled-back write enqueues nothing. */
  enqueue(w: Writer, job: JobSpec): Promise<void>;
  /** Enqueues on its own, outside any transaction. */
  add(job: JobSpec): Promise<void>;
  /** Registers handlers and starts claiming jobs (concurrency from configuration). */
  start(definitions: JobDefinition<any>[], crons?: CronSpec[]): Promise<void>;
  /** Stops claiming; waits for jobs in hand up to `timeoutMs`, then releases what is left for another worker. */
  stop(timeoutMs?: number): Promise<void>;
  /** Jobs due and not yet claimed, by job name, with how long the oldest has waited (for metrics). */
  waiting(): Promise<WaitingJobs[]>;
  health(): QueueHealth;
}

export interface WaitingJobs {
  kind: string;
  waiting: number;
  oldestAgeSeconds: number;
}
