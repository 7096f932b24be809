import { eq } from "drizzle-orm";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { loadWebhook, type WebhookRow } from "./record";
import { UpdateWebhookInput, WEBHOOK_READ_ONLY } from "./shapes";
import { checkTargetOnSave } from "./targets";
import { fieldsOf, recordAudit } from "../audit";

/** Partial update: members left out keep their value. The signing secret never changes here (see rotateWebhookSecret). */
export async function updateWebhook(ctx: ServiceContext, opts: CallOptions & { id: string; input: UpdateWebhookInput }): Promise<WebhookRow> {
  const input = parseInput(UpdateWebhookInput, withoutReadOnly(opts.input, WEBHOOK_READ_ONLY));
  // Checked before the transaction: a DNS look-up must not hold the write lock.
  if (input.url !== undefined) await checkTargetOnSave(ctx, input.url, "url");
  const wh = ctx.db.t.webhooks;
  return ctx.db.tx(async (w) => {
    const cur = await loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    const next: WebhookRow = {
      ...cur,
      name: input.name ?? cur.name,
      url: input.url ?? cur.url,
      isActive: input.isActive ?? cur.isActive,
      events: input.eventTypes ?? cur.events,
      description: input.description === undefined ? cur.description : input.description || null,
      updatedAt: ctx.clock.now(),
    };
    await w.update(wh).set(next).where(eq(wh.id, cur.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId: cur.workspaceId, action: "webhook.update", resourceType: "webhook", resourceId: cur.id, fields: fieldsOf(input) });
    return next;
  });
}
