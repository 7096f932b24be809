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

/**
 * Why the jobs in hand were aborted when the pool lost its liveness
 * connection: the database's fault, not the job's, so the attempt is given
 * back once graphile recorded the failure (graphileTask).
 */
export class LivenessLost extends Error {
  constructor() {
    super("worker liveness lost: the job may be taken by another worker");
  }
}

/** How long a lost-liveness job's attempt is tried to be given back before graphile's own failure stands. */
const GIVE_BACK_WITHIN_MS = 20_000;

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
    const pool = helpers.job.locked_by ?? a.poolId() ?? "";
    if (controller.signal.aborted) {
      const reason = asError(controller.signal.reason);
      if (reason instanceof LivenessLost) {
        // The database's fault, not the job's: once graphile recorded the failure (and its
        // delay keeps the job from being claimed), the attempt is given back and it runs at once.
        // Not when another worker took the job meanwhile (its sweep saw the lock free): that
        // attempt is theirs, and graphile's failure here is a no-op.
        afterUnlock(
          a,
          job.id,
          job.attempts,
          (id) => a.sql`select graphile_worker.reschedule_jobs(array[${id}]::bigint[], attempts => ${job.attempts - 1}::int, run_at => now())`,
          { withinMs: GIVE_BACK_WITHIN_MS, lastError: reason.message },
        );
      }
      // Handed back at shutdown: throwing makes graphile's fail a no-op (the job is no
      // longer locked by this pool), where returning would delete the job.
      throw reason;
    }
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
 * claim it, this replaces the delay with ours (or fails the job for good,
 * or gives the attempt back). Functions of graphile's public API only touch
 * unlocked jobs, hence the wait. `lastError`: only if graphile recorded this
 * failure (not a later attempt's). A database that does not answer is tried
 * again until `withinMs`.
 */
function afterUnlock(
  a: Attempts,
  jobId: string,
  attempts: number,
  apply: (id: string) => Promise<unknown>,
  o: { withinMs?: number; lastError?: string } = {},
): void {
  const deadline = Date.now() + (o.withinMs ?? 2_000);
  const lastError = o.lastError ?? null;
  const attempt = async (): Promise<void> => {
    let wait = 5;
    try {
      const [row] = await a.sql<{ id: string }[]>`
        select id from graphile_worker.jobs
        where id = ${jobId}::bigint and attempts = ${attempts}::int and locked_at is null
          and (${lastError}::text is null or last_error = ${lastError}::text)`;
      if (row) {
        await apply(jobId);
        return;
      }
    } catch (e) {
      if (Date.now() > deadline) throw e;
      wait = 200;
    }
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, wait));
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
