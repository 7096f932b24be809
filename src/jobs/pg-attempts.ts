import { Logger as GraphileLogger, type Task } from "graphile-worker";
import type postgres from "postgres";
import type { Logger } from "../logger";
import type { OutcomeLedger } from "./pg-replay";
import type { JobDefinition } from "./port";
import { asError, type Outcome, runJob } from "./run-job";
import type { QueueSettings } from "./spec";

/**
 * One attempt of a job on graphile-worker: the task graphile runs for a job
 * definition, how its outcome is recorded (the ledger replays it if the
 * database was away) and how the queue's retry delay or final failure
 * replaces graphile's own. src/jobs/pg-queue.ts owns the runner, liveness
 * and sweeps around it.
 */

/**
 * What the queue stores as graphile-worker's payload. `maxAttempts` is the
 * caller's limit: graphile's own max_attempts is raised by one when a worker
 * died on the last attempt, so the queue can still give the job up.
 */
export interface Envelope {
  payload: unknown;
  maxAttempts: number;
}
export const isEnvelope = (v: unknown): v is Envelope =>
  typeof v === "object" && v !== null && "payload" in v && Number.isInteger((v as Envelope).maxAttempts);

/** A job this pool is running, until its attempt ends. */
export interface InHand {
  id: string;
  attempts: number;
  controller: AbortController;
}

/** What an attempt needs from its queue. */
export interface Attempts {
  readonly inHand: Map<string, InHand>;
  readonly ledger: OutcomeLedger;
  readonly sql: postgres.Sql;
  /** The worker pool's id while a runner runs. */
  poolId(): string | null;
  readonly retry: QueueSettings["retry"];
  readonly log: Logger;
}

export function graphileTask(definition: JobDefinition<unknown>, a: Attempts): Task {
  return async (raw, helpers) => {
    const job = helpers.job;
    const controller = new AbortController();
    const entry: InHand = { id: job.id, attempts: job.attempts, controller };
    a.inHand.set(job.id, entry);
    let outcome: Outcome;
    try {
      outcome = isEnvelope(raw)
        ? await runJob({
            definition,
            payload: raw.payload,
            jobId: job.id,
            attempt: job.attempts,
            maxAttempts: raw.maxAttempts,
            signal: controller.signal,
            retry: a.retry,
            log: a.log,
          })
        : { status: "failed", error: new Error("job payload is not in the queue's envelope (added outside the job queue?)") };
    } finally {
      if (a.inHand.get(job.id) === entry) a.inHand.delete(job.id);
    }
    if (controller.signal.aborted) {
      // Handed back at shutdown: throwing makes graphile's fail a no-op (the job is
      // no longer locked by this pool), where returning would delete the job.
      throw asError(controller.signal.reason);
    }
    const pool = helpers.job.locked_by ?? a.poolId() ?? "";
    if (outcome.status === "completed") {
      a.ledger.record(job.id, { pool, attempts: job.attempts, kind: "completed" });
      return;
    }
    a.ledger.record(job.id, {
      pool,
      attempts: job.attempts,
      kind: outcome.status,
      delayMs: outcome.status === "retry" ? outcome.delayMs : undefined,
      message: outcome.error.message,
    });
    if (outcome.status === "retry") {
      afterUnlock(a, job.id, job.attempts, (id) =>
        a.sql`select graphile_worker.reschedule_jobs(array[${id}]::bigint[], run_at => now() + ${outcome.delayMs}::int * interval '1 millisecond')`,
      );
    } else if (job.attempts < job.max_attempts) {
      afterUnlock(a, job.id, job.attempts, (id) =>
        a.sql`select graphile_worker.permanently_fail_jobs(array[${id}]::bigint[], ${outcome.error.message}::text)`,
      );
    }
    // On the last attempt graphile marks the job failed for good by itself.
    throw outcome.error;
  };
}

/**
 * graphile applies its own delay (at least e seconds) when a task throws
 * and unlocks the job right after; once unlocked, and before anyone can
 * claim it, this replaces the delay with ours (or fails the job for good).
 * Functions of graphile's public API only touch unlocked jobs, hence the wait.
 */
function afterUnlock(a: Attempts, jobId: string, attempts: number, apply: (id: string) => Promise<unknown>): void {
  const deadline = Date.now() + 2_000;
  const attempt = async (): Promise<void> => {
    const [row] = await a.sql<{ id: string }[]>`
      select id from graphile_worker.jobs where id = ${jobId}::bigint and attempts = ${attempts}::int and locked_at is null`;
    if (row) {
      await apply(jobId);
      return;
    }
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 5));
    return attempt();
  };
  void attempt().catch((e) => a.log.warn({ jobId, err: asError(e) }, "could not adjust a failed job; graphile's own delay applies"));
}

/** graphile-worker's log lines through the service logger, one level quieter (it logs every job at info). */
export function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger((scope) => (level, message, meta) => {
    const fields = { graphile: scope.label ?? "worker", jobId: scope.jobId, ...(meta?.error ? { err: meta.error } : {}) };
    // Failed attempts are logged by the queue itself, with the decision taken.
    if (level === "error" && !message.startsWith("Failed task")) log.error(fields, message);
    else if (level === "warning") log.info(fields, message);
    else log.debug(fields, message);
  });
}
