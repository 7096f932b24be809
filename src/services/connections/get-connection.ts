import type { CallOptions, ServiceContext } from "../context";
import { type ConnectionRecord, loadConnection } from "./record";

export function getConnection(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<ConnectionRecord> {
  return loadConnection(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}
