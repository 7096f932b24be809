import type { CallOptions, ServiceContext } from "../context";
import { type PipelineRecord, readPipeline } from "./record";

/** The caller's pipeline; at once when it is kept in the read cache (callers await only a Promise). */
export function getPipeline(ctx: ServiceContext, opts: CallOptions & { id: string }): PipelineRecord | Promise<PipelineRecord> {
  return readPipeline(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}
