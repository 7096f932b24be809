import { eq } from "drizzle-orm";
import type { CallOptions, ServiceContext } from "../context";
import { loadPipelineRow } from "./record";

/** Deletes the pipeline and its webhook links; its runs stay and report `DELETED PIPELINE`. */
export async function deletePipeline(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<{ id: string; deleted: true }> {
  const p = ctx.db.t.pipelines;
  return ctx.db.tx(async (w) => {
    await loadPipelineRow(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    await w.delete(ctx.db.t.pipelineWebhooks).where(eq(ctx.db.t.pipelineWebhooks.pipelineId, opts.id));
    await w.delete(p).where(eq(p.id, opts.id));
    return { id: opts.id, deleted: true as const };
  });
}
