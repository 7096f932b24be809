import { and, eq, sql } from "drizzle-orm";
import { AppError } from "../../../domain/errors";
import type { CallOptions, ServiceContext } from "../../context";
import type { RunMetadata } from "../../../domain/runs";
import { loadRun, type RunRecord, type RunRow } from "../../runs/record";
import { publishStatus } from "../announce/live";
import { queueRun } from "./queue-run";
import { recordAudit } from "../../audit";

/**
 * The retry door's way in: a failed run is processed again, as a new
 * attempt of the same run (same id, same original file), with the pipeline
 * and schema as they are now. Only a `failed` run; anything else is a 409.
 */
export async function startAttempt(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<RunRecord> {
  const workspaceId = opts.actor.workspaceId;
  const cur = await loadRun(ctx, { workspaceId, id: opts.id });
  const run = ctx.db.t.pipelineRuns;
  const attempt = cur.row.attempt + 1;
  const moved = await ctx.db.tx(async (w) => {
    const rows = await w
      .update(run)
      .set({
        status: "pending",
        attempt: sql`${run.attempt} + 1`,
        errorMessage: null,
        processedAt: null,
        processedKey: null,
        rejectsKey: null,
        // Processed with the pipeline as it is now, whatever version the earlier attempt used.
        pipelineVersion: null,
        metadata: restarted(cur.row),
        updatedAt: ctx.clock.now(),
      })
      .where(and(eq(run.id, cur.row.id), eq(run.workspaceId, workspaceId), eq(run.status, "failed"), eq(run.attempt, cur.row.attempt)))
      .returning({ id: run.id });
    if (rows.length === 0) return false;
    await queueRun(ctx, w, cur.row.id, attempt);
    await recordAudit(ctx, w, opts.actor, { workspaceId, action: "run.retry", resourceType: "run", resourceId: cur.row.id });
    return true;
  });
  if (!moved) {
    const now = await loadRun(ctx, { workspaceId, id: opts.id });
    throw new AppError("conflict", `status: only a failed run can be retried; run '${opts.id}' is ${now.row.status}`);
  }
  await publishStatus(ctx, cur.row, "pending", "failed");
  return loadRun(ctx, { workspaceId, id: opts.id });
}

/** The new attempt starts from the arrival facts; each earlier attempt's failure stays readable in `history`. */
function restarted(row: RunRow): RunMetadata {
  const { source, arrival, history } = row.metadata as RunMetadata & { history?: unknown[] };
  const previous = { attempt: row.attempt, errorMessage: row.errorMessage, rows: row.metadata.rows, endedAt: row.processedAt?.toISOString() ?? null };
  const out: RunMetadata = { source, history: [...(Array.isArray(history) ? history : []), previous] };
  if (arrival !== undefined) out.arrival = arrival;
  return out;
}
