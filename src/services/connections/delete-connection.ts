import { and, eq } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { CallOptions, ServiceContext } from "../context";
import { loadConnection } from "./record";
import { dropServerIfUnused } from "./save";
import { recordAudit } from "../audit";

/** Refused with 409 while pipelines are bound to the connection: deleting it would orphan them. */
export async function deleteConnection(
  ctx: ServiceContext,
  opts: CallOptions & { id: string },
): Promise<{ id: string; deleted: true }> {
  const workspaceId = opts.actor.workspaceId;
  const { connections: c, pipelines: p } = ctx.db.t;
  return ctx.db.tx(async (w) => {
    const current = await loadConnection(ctx, { workspaceId, id: opts.id }, w);
    const bound = await w
      .select({ name: p.name })
      .from(p)
      .where(and(eq(p.workspaceId, workspaceId), eq(p.connectionId, opts.id)))
      .limit(6);
    if (bound.length > 0) {
      const names = bound.slice(0, 5).map((b) => `'${b.name}'`);
      throw new AppError(
        "conflict",
        `connection '${opts.id}' is used by pipelines ${names.join(", ")}${bound.length > 5 ? " and more" : ""}; delete or move them first`,
      );
    }
    await w.delete(c).where(eq(c.id, opts.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId, action: "connection.delete", resourceType: "connection", resourceId: opts.id });
    await dropServerIfUnused(ctx, w, current.row.sftpServerId);
    return { id: opts.id, deleted: true as const };
  });
}
