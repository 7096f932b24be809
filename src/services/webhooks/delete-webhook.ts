import { eq } from "drizzle-orm";
import type { CallOptions, ServiceContext } from "../context";
import { loadWebhook } from "./record";
import { recordAudit } from "../audit";

/** Deletes the webhook; its links to pipelines go with it, by foreign-key cascade. */
export async function deleteWebhook(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<{ id: string; deleted: true }> {
  const wh = ctx.db.t.webhooks;
  return ctx.db.tx(async (w) => {
    await loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    await w.delete(wh).where(eq(wh.id, opts.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "webhook.delete", resourceType: "webhook", resourceId: opts.id });
    return { id: opts.id, deleted: true as const };
  });
}
