import type { Writer } from "../../../../db/client";
import type { ServiceContext } from "../../context";
import { RUN_JOB, RUN_JOB_ATTEMPTS, runJobKey } from "../../runs/record";
import type { ProcessRunPayload } from "../../runs/shapes";

/**
 * Where ingest ends: the run's `run.process` job, enqueued in the
 * transaction that makes the run `pending` (a new run, or a failed one's
 * next attempt), so a pending run always has its job and a rolled-back one
 * never does. Process takes it from there.
 */
export async function queueRun(ctx: ServiceContext, w: Writer, runId: string, attempt: number): Promise<void> {
  const payload: ProcessRunPayload = { runId, attempt };
  await ctx.queue.enqueue(w, { name: RUN_JOB, payload, key: runJobKey(runId, attempt), maxAttempts: RUN_JOB_ATTEMPTS });
}
