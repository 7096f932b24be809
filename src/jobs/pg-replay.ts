import type postgres from "postgres";

/** What a task decided for one attempt, kept until graphile-worker has recorded it (or its pool died trying). */
export interface Decided {
  pool: string;
  attempts: number;
  kind: "completed" | "retry" | "failed";
  /** retry: our backoff delay. */
  delayMs?: number;
  /** retry and failed: the error message. */
  message?: string;
  at: number;
}

/**
 * The outcomes of attempts, by job id. graphile-worker writes a job's
 * completion or failure after the task returns; when that write fails (the
 * database went away), it stops its worker pool and the job stays locked by
 * that pool. The queue then replays the outcome from here once the database
 * answers again, so that nothing a task finished is lost or run again.
 */
export class OutcomeLedger {
  private readonly decided = new Map<string, Decided>();

  record(jobId: string, d: Omit<Decided, "at">): void {
    this.decided.set(jobId, { ...d, at: Date.now() });
  }

  /** Whether a task of `pool` decided job `jobId`'s outcome (graphile may not have recorded it yet). */
  decidedBy(jobId: string, pool: string): boolean {
    return this.decided.get(jobId)?.pool === pool;
  }

  /** Forgets what a live pool decided long ago: graphile records an outcome within milliseconds or its pool dies. */
  prune(livePool: string | null, olderThanMs: number): void {
    const limit = Date.now() - olderThanMs;
    for (const [id, d] of this.decided) if (d.pool === livePool && d.at < limit) this.decided.delete(id);
  }

  /**
   * Replays the outcomes of a pool that stopped, in one transaction: each job
   * it still holds is unlocked, then completed, rescheduled with the queue's
   * own delay, or failed for good as its task decided. A job it holds with no
   * outcome (handed back, or abandoned when liveness was lost) is unlocked and
   * runs again, its attempt given back. Answers how many jobs were replayed.
   */
  async replay(sql: postgres.Sql, pool: string): Promise<{ completed: number; rescheduled: number; failed: number; unlocked: number }> {
    const counts = { completed: 0, rescheduled: 0, failed: 0, unlocked: 0 };
    await sql.begin(async (tx) => {
      const held = await tx<{ id: string; attempts: number }[]>`
        select id, attempts from graphile_worker.jobs where locked_by = ${pool}`;
      await tx`select graphile_worker.force_unlock_workers(array[${pool}]::text[])`;
      for (const job of held) {
        const d = this.decided.get(job.id);
        if (!d || d.pool !== pool || d.attempts !== job.attempts) {
          // Its task did not finish because the runner stopped (the database's fault): the attempt is not counted.
          await tx`select graphile_worker.reschedule_jobs(array[${job.id}]::bigint[], attempts => ${Math.max(0, job.attempts - 1)}::int)`;
          counts.unlocked++;
          continue;
        }
        if (d.kind === "completed") {
          await tx`select graphile_worker.complete_jobs(array[${job.id}]::bigint[])`;
          counts.completed++;
        } else if (d.kind === "retry") {
          await tx`select graphile_worker.reschedule_jobs(array[${job.id}]::bigint[], run_at => now() + ${d.delayMs ?? 0}::int * interval '1 millisecond')`;
          counts.rescheduled++;
        } else {
          await tx`select graphile_worker.permanently_fail_jobs(array[${job.id}]::bigint[], ${d.message ?? "failed"}::text)`;
          counts.failed++;
        }
      }
    });
    for (const [id, d] of this.decided) if (d.pool === pool) this.decided.delete(id);
    return counts;
  }
}
