import { and, eq, isNull } from "drizzle-orm";
import { notFound } from "../../domain/errors";
import type { ServiceContext } from "../context";
import { toView } from "./present";
import type { ApiKeyView } from "./shapes";
import { type ChangedBy, recordAudit } from "../audit";

/** Revoking is immediate: the next request with the key is refused. Revoking twice is not an error. */
export async function revokeKey(ctx: ServiceContext, opts: { keyId: string; workspaceId?: string; by?: ChangedBy }): Promise<ApiKeyView> {
  const k = ctx.db.t.apiKeys;
  return ctx.db.tx(async (w) => {
    const where = opts.workspaceId ? and(eq(k.id, opts.keyId), eq(k.workspaceId, opts.workspaceId)) : eq(k.id, opts.keyId);
    const now = ctx.clock.now();
    const changed = await w
      .update(k)
      .set({ revokedAt: now, updatedAt: now })
      .where(and(where, isNull(k.revokedAt)))
      .returning({ id: k.id });
    const [row] = await w.select().from(k).where(where);
    if (!row) throw notFound("API key", opts.keyId);
    if (changed.length > 0) {
      await recordAudit(ctx, w, opts.by ?? "cli", { workspaceId: row.workspaceId, action: "apiKey.revoke", resourceType: "apiKey", resourceId: row.id, fields: ["revokedAt"] });
    }
    return toView(row);
  });
}
