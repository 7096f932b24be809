import type { CallOptions, ServiceContext } from "../context";
import { loadRun, type RunRecord } from "./record";

export function getRun(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<RunRecord> {
  return loadRun(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}
