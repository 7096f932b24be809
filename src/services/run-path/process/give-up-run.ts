import { and, eq, inArray } from "drizzle-orm";
import type { RunStatus } from "../../../domain/runs";
import type { ServiceContext } from "../../context";
import { enqueueRunEvent } from "../announce/run-events";
import { loadRunRow } from "../../runs/record";
import { publishStatus } from "../announce/live";

/**
 * The `run.process` job failed on every attempt (the engine's worker kept
 * dying, storage or the database kept failing): the run fails with a message
 * that says what happened and what to do. A run that ended meanwhile, or was
 * retried (a later attempt owns it), is left alone.
 */
export async function giveUpRun(
  ctx: ServiceContext,
  opts: { runId: string; attempt?: number; attempts: number; error: Error },
): Promise<boolean> {
  const row = await loadRunRow(ctx, opts.runId);
  if (!row || (opts.attempt !== undefined && row.attempt !== opts.attempt)) return false;
  const run = ctx.db.t.pipelineRuns;
  const last = (opts.error.message || opts.error.name).slice(0, 500);
  const errorMessage = `processing failed after ${opts.attempts} attempts: ${last}; retry with POST /pipeline-runs/${row.id}/retry`;
  const now = ctx.clock.now();
  const live: RunStatus[] = ["pending", "processing"];
  const moved = await ctx.db.tx(async (w) => {
    const m = await w
      .update(run)
      .set({ status: "failed", errorMessage, processedAt: now, updatedAt: now, metadata: { ...row.metadata, attempts: row.attempt } })
      .where(and(eq(run.id, row.id), inArray(run.status, live), eq(run.attempt, row.attempt)))
      .returning({ id: run.id });
    if (m.length > 0) await enqueueRunEvent(ctx, w, row, "failed", row.status as RunStatus);
    return m;
  });
  if (moved.length === 0) return false;
  ctx.metrics.runFinished("failed", row.direction, Math.max(0, now.getTime() - row.createdAt.getTime()) / 1000);
  await publishStatus(ctx, row, "failed", row.status as RunStatus);
  return true;
}
