import { eq } from "drizzle-orm";
import type { CallOptions, ServiceContext } from "../context";
import { loadPipelineRow } from "./record";
import { recordAudit } from "../audit";

/** Deletes the pipeline (its webhook links go with it, by foreign-key cascade); its runs stay and report `DELETED PIPELINE`. */
export async function deletePipeline(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<{ id: string; deleted: true }> {
  const p = ctx.db.t.pipelines;
  return ctx.db.tx(async (w) => {
    await loadPipelineRow(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    await w.delete(p).where(eq(p.id, opts.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "pipeline.delete", resourceType: "pipeline", resourceId: opts.id });
    return { id: opts.id, deleted: true as const };
  });
}
