import { and, eq } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { CallOptions, ServiceContext } from "../context";
import { type DeliveryRow, loadDelivery, loadEvent, recordAttempt } from "./deliveries";
import { sendAttempt } from "./send-attempt";
import { recordAudit } from "../audit";

/**
 * Sends a delivery's event again, now, to its webhook as it is now (URL and
 * secret), and records the attempt (trigger `manual`). Answers the new
 * delivery. A manual attempt schedules no retries; automatic ones still due
 * go ahead.
 */
export async function redeliver(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<DeliveryRow> {
  const workspaceId = opts.actor.workspaceId;
  const original = await loadDelivery(ctx, { workspaceId, id: opts.id });
  const wh = ctx.db.t.webhooks;
  const [hook] = await ctx.db.read
    .select()
    .from(wh)
    .where(and(eq(wh.id, original.webhookId), eq(wh.workspaceId, workspaceId)));
  if (!hook) throw new AppError("conflict", `webhook '${original.webhookId}' of this delivery was deleted; nothing to redeliver to`);
  if (!hook.isActive) throw new AppError("conflict", `webhook '${hook.id}' is inactive; activate it to redeliver`);
  const event = await loadEvent(ctx, original.eventId);
  if (!event) throw new AppError("conflict", `event '${original.eventId}' of this delivery is no longer stored`);

  const result = await sendAttempt(ctx, hook, event);
  const unsubscribe = result.gone && hook.kind === "PIPELINE_RUN_EVENT";
  return ctx.db.tx(async (w) => {
    const row = await recordAttempt(ctx, w, { event, webhookId: hook.id, url: hook.url, trigger: "manual", outcome: result, nextAttemptAt: null });
    if (unsubscribe) await w.delete(wh).where(and(eq(wh.id, hook.id), eq(wh.kind, "PIPELINE_RUN_EVENT")));
    await recordAudit(ctx, w, opts.actor, { workspaceId, action: "webhookDelivery.redeliver", resourceType: "webhookDelivery", resourceId: original.id });
    return row;
  });
}
