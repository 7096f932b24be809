import type { CallOptions, ServiceContext } from "../context";
import { loadPipeline, type PipelineRecord } from "./record";

export function getPipeline(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<PipelineRecord> {
  return loadPipeline(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}
