import { eq } from "drizzle-orm";
import type { CallOptions, ServiceContext } from "../context";
import { loadParts, loadUpload, presentUpload } from "./record";
import type { OutboundUpload } from "./shapes";

/** `GET /outbound/uploads/{uploadId}`: the session, its received parts, the connection's current name and, once completed, its run. */
export async function getOutboundUpload(ctx: ServiceContext, opts: CallOptions & { uploadId: string }): Promise<OutboundUpload> {
  const row = await loadUpload(ctx, { workspaceId: opts.actor.workspaceId, id: opts.uploadId });
  const c = ctx.db.t.connections;
  const [parts, [conn]] = await Promise.all([
    loadParts(ctx, row.id),
    ctx.db.read.select({ name: c.name }).from(c).where(eq(c.id, row.connectionId)),
  ]);
  return presentUpload(row, parts, ctx.clock.now(), conn?.name ?? null);
}
