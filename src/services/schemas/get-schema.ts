import type { CallOptions, ServiceContext } from "../context";
import { loadSchema, type SchemaRow } from "./record";

export function getSchema(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<SchemaRow> {
  return loadSchema(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}
