import { and, eq } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { CallOptions, ServiceContext } from "../context";
import { loadSchema } from "./record";
import { recordAudit } from "../audit";

/** Refused with 409 while pipelines use the schema. */
export async function deleteSchema(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<{ id: string; deleted: true }> {
  const { schemas: s, pipelines: p } = ctx.db.t;
  const workspaceId = opts.actor.workspaceId;
  return ctx.db.tx(async (w) => {
    await loadSchema(ctx, { workspaceId, id: opts.id }, w);
    const users = await w.select({ name: p.name }).from(p).where(and(eq(p.workspaceId, workspaceId), eq(p.schemaId, opts.id))).limit(6);
    if (users.length > 0) {
      const names = users.slice(0, 5).map((u) => `'${u.name}'`);
      throw new AppError(
        "conflict",
        `schema '${opts.id}' is used by pipelines ${names.join(", ")}${users.length > 5 ? " and more" : ""}; delete them or point them at another schema first`,
      );
    }
    await w.delete(s).where(eq(s.id, opts.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId, action: "schema.delete", resourceType: "schema", resourceId: opts.id });
    return { id: opts.id, deleted: true as const };
  });
}
