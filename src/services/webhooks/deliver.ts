import { and, eq, isNotNull } from "drizzle-orm";
import { z } from "zod";
import type { JobSpec } from "../../jobs/port";
import type { ServiceContext } from "../context";
import { attemptsOf, loadEvent, recordAttempt } from "./deliveries";
import { nextRetryDelayMs } from "./retry";
import { sendAttempt } from "./send-attempt";

export const WEBHOOK_DELIVERY_JOB = "webhook.deliver";

export const DeliveryPayload = z.object({
  eventId: z.string().min(1),
  webhookId: z.string().min(1),
  /** Which automatic attempt this is: 1 = the first send, 2 = the first retry, ... */
  step: z.number().int().min(1),
});
export type DeliveryPayload = z.infer<typeof DeliveryPayload>;

/**
 * Attempts of the job itself (a crash, a database error); a receiver's
 * failure is not one of them: it is recorded and the next attempt is a new
 * job, scheduled by the retry schedule.
 */
const JOB_ATTEMPTS = 5;

export function deliveryJob(p: DeliveryPayload, runAt?: Date): JobSpec<DeliveryPayload> {
  return { name: WEBHOOK_DELIVERY_JOB, payload: p, key: `${WEBHOOK_DELIVERY_JOB}:${p.eventId}:${p.webhookId}:${p.step}`, runAt, maxAttempts: JOB_ATTEMPTS };
}

/**
 * One automatic attempt of one event to one webhook, then, in the
 * transaction that records it, the job for the next attempt (runAt: the
 * retry schedule or the receiver's Retry-After). Everything that must
 * survive a restart is in the database: the recorded attempts and the
 * waiting job.
 */
export async function deliverWebhook(ctx: ServiceContext, p: DeliveryPayload, signal?: AbortSignal): Promise<void> {
  const { webhooks: wh, webhookDeliveries: d } = ctx.db.t;
  // A job that ran to its commit and then lost its worker runs again: its attempt is already recorded.
  const previous = await attemptsOf(ctx, ctx.db.read, p);
  if (previous.filter((a) => a.trigger === "automatic").length >= p.step) return;

  const [hook] = await ctx.db.read.select().from(wh).where(eq(wh.id, p.webhookId));
  const event = await loadEvent(ctx, p.eventId);
  if (!hook || !hook.isActive || !event) {
    // Deleted or paused since: the chain ends here, and the log says no attempt is due.
    await ctx.db.tx((w) =>
      w
        .update(d)
        .set({ nextAttemptAt: null })
        .where(and(eq(d.webhookId, p.webhookId), eq(d.eventId, p.eventId), isNotNull(d.nextAttemptAt))),
    );
    return;
  }

  const result = await sendAttempt(ctx, hook, event, signal);
  if (result.aborted) throw new Error("webhook delivery cut short by shutdown; the job is handed back");

  const unsubscribe = result.gone && hook.kind === "PIPELINE_RUN_EVENT";
  const delay = result.success || result.refused || unsubscribe ? null : nextRetryDelayMs(ctx.webhooks.settings, p.step, result.retryAfterMs);
  const nextAttemptAt = delay === null ? null : new Date(ctx.clock.now().getTime() + delay);
  await ctx.db.tx(async (w) => {
    await recordAttempt(ctx, w, { event, webhookId: hook.id, url: hook.url, trigger: "automatic", outcome: result, nextAttemptAt });
    // The queue's clock is the wall clock (docs/decisions/jobs.md), so the job's runAt is counted from it.
    if (delay !== null) await ctx.queue.enqueue(w, deliveryJob({ ...p, step: p.step + 1 }, new Date(Date.now() + delay)));
    if (unsubscribe) await w.delete(wh).where(and(eq(wh.id, hook.id), eq(wh.kind, "PIPELINE_RUN_EVENT")));
  });
  if (unsubscribe) ctx.log.info({ webhookId: hook.id, url: hook.url }, "automation-platform hook answered 410 Gone: unsubscribed");
}
