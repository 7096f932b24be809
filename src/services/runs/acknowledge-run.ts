import { and, eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { RunStatus } from "../../domain/runs";
import type { CallOptions, ServiceContext } from "../context";
import { enqueueRunEvent } from "../run-path/announce/run-events";
import { loadRun, type RunRecord } from "./record";
import { publishStatus } from "../run-path/announce/live";
import { AcknowledgeRunInput } from "./shapes";
import { recordAudit } from "../audit";

/**
 * Any run may be acknowledged, whatever its status (the spec's only client
 * transition). A run acknowledged while it is still processing keeps
 * `acknowledged` and gets its results when processing ends.
 */
export async function acknowledgeRun(
  ctx: ServiceContext,
  opts: CallOptions & { id: string; input: AcknowledgeRunInput },
): Promise<RunRecord> {
  const workspaceId = opts.actor.workspaceId;
  // Another workspace's run is a 404 whatever the body says.
  await loadRun(ctx, { workspaceId, id: opts.id });
  parseInput(AcknowledgeRunInput, opts.input);
  const run = ctx.db.t.pipelineRuns;
  // The previous status goes into the event; the guard makes sure it is the one replaced.
  for (;;) {
    const cur = await loadRun(ctx, { workspaceId, id: opts.id });
    const previous = cur.row.status as RunStatus;
    if (previous === "acknowledged") return cur;
    const moved = await ctx.db.tx(async (w) => {
      const m = await w
        .update(run)
        .set({ status: "acknowledged", updatedAt: ctx.clock.now() })
        .where(and(eq(run.id, cur.row.id), eq(run.workspaceId, workspaceId), eq(run.status, previous)))
        .returning({ id: run.id });
      if (m.length > 0) {
        await enqueueRunEvent(ctx, w, cur.row, "acknowledged", previous);
        await recordAudit(ctx, w, opts.actor, { workspaceId, action: "run.acknowledge", resourceType: "run", resourceId: cur.row.id, fields: ["status"] });
      }
      return m;
    });
    if (moved.length > 0) {
      await publishStatus(ctx, cur.row, "acknowledged", previous);
      return loadRun(ctx, { workspaceId, id: opts.id });
    }
  }
}
