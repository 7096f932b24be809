import { eq } from "drizzle-orm";
import type { CallOptions, ServiceContext } from "../context";
import { loadWebhook } from "./record";

/** Unlinks the webhook from every pipeline, then deletes it. */
export async function deleteWebhook(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<{ id: string; deleted: true }> {
  const { webhooks: wh, pipelineWebhooks: pw } = ctx.db.t;
  return ctx.db.tx(async (w) => {
    await loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    await w.delete(pw).where(eq(pw.webhookId, opts.id));
    await w.delete(wh).where(eq(wh.id, opts.id));
    return { id: opts.id, deleted: true as const };
  });
}
