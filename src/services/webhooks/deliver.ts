import { and, eq, inArray, isNotNull } from "drizzle-orm";
import { z } from "zod";
import type { JobSpec } from "../../jobs/port";
import type { ServiceContext } from "../context";
import { loadEvent, recordAttempt, type WebhookEventRow } from "./deliveries";
import type { WebhookRow } from "./record";
import { nextRetryDelayMs } from "./retry";
import { type AttemptResult, sendAttempt } from "./send-attempt";

export const WEBHOOK_DELIVERY_JOB = "webhook.deliver";

export const DeliveryPayload = z.object({
  eventId: z.string().min(1),
  /** The event's first attempt goes to every recipient in one job; each retry is a job for one webhook. */
  webhookIds: z.array(z.string().min(1)).min(1),
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
/** Sends in flight at once within one job (an event with many recipients). */
const SENDS_PER_JOB = 16;

export function deliveryJob(p: DeliveryPayload, runAt?: Date): JobSpec<DeliveryPayload> {
  const key = p.webhookIds.length === 1 && p.step > 1 ? `${p.eventId}:${p.webhookIds[0]}:${p.step}` : `${p.eventId}:${p.step}`;
  return { name: WEBHOOK_DELIVERY_JOB, payload: p, key: `${WEBHOOK_DELIVERY_JOB}:${key}`, runAt, maxAttempts: JOB_ATTEMPTS };
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * One automatic attempt of one event to each of the job's webhooks (sent at
 * once, side by side), then, in one transaction, every attempt recorded and
 * a job for each webhook's next attempt (runAt: the retry schedule or the
 * receiver's Retry-After). Everything that must survive a restart is in the
 * database: the recorded attempts and the waiting jobs. Recording a whole
 * event's first attempts in one transaction keeps the SQLite default's
 * commits (each one a disk flush) to a few per event.
 */
export async function deliverWebhook(ctx: ServiceContext, p: DeliveryPayload, signal?: AbortSignal): Promise<void> {
  const { webhooks: wh, webhookDeliveries: d } = ctx.db.t;
  const event = await loadEvent(ctx, p.eventId);
  // A job that ran to its commit and then lost its worker runs again: webhooks whose attempt is recorded are done.
  const recorded = await ctx.db.read
    .select({ webhookId: d.webhookId })
    .from(d)
    .where(and(eq(d.eventId, p.eventId), inArray(d.webhookId, p.webhookIds), eq(d.trigger, "automatic")));
  const count = new Map<string, number>();
  for (const r of recorded) count.set(r.webhookId, (count.get(r.webhookId) ?? 0) + 1);
  const due = p.webhookIds.filter((id) => (count.get(id) ?? 0) < p.step);
  if (due.length === 0) return;

  const hooks = await ctx.db.read.select().from(wh).where(inArray(wh.id, due));
  const live = hooks.filter((h) => h.isActive);
  const ended = due.filter((id) => !event || !live.some((h) => h.id === id));
  if (ended.length > 0 && p.step > 1) {
    // Deleted or paused since (or the event is gone): their chains end here, and the log says no attempt is due.
    await ctx.db.tx((w) =>
      w
        .update(d)
        .set({ nextAttemptAt: null })
        .where(and(eq(d.eventId, p.eventId), inArray(d.webhookId, ended), isNotNull(d.nextAttemptAt))),
    );
  }
  if (!event || live.length === 0) return;

  const results = await mapLimit(live, SENDS_PER_JOB, (hook) => sendAttempt(ctx, hook, event, signal));
  if (results.some((r) => r.aborted)) throw new Error("webhook delivery cut short by shutdown; the job is handed back");
  await recordAutomatic(ctx, event, p.step, live.map((hook, i) => ({ hook, result: results[i]! })));
}

async function recordAutomatic(ctx: ServiceContext, event: WebhookEventRow, step: number, attempts: { hook: WebhookRow; result: AttemptResult }[]) {
  const wh = ctx.db.t.webhooks;
  const gone: WebhookRow[] = [];
  const spent: { hook: WebhookRow; result: AttemptResult }[] = [];
  await ctx.db.tx(async (w) => {
    for (const { hook, result } of attempts) {
      const unsubscribe = result.gone && hook.kind === "PIPELINE_RUN_EVENT";
      const delay = result.success || result.refused || unsubscribe ? null : nextRetryDelayMs(ctx.webhooks.settings, step, result.retryAfterMs);
      const nextAttemptAt = delay === null ? null : new Date(ctx.clock.now().getTime() + delay);
      await recordAttempt(ctx, w, { event, webhookId: hook.id, url: hook.url, trigger: "automatic", outcome: result, nextAttemptAt });
      // The queue's clock is the wall clock (docs/decisions/jobs.md), so the job's runAt is counted from it.
      if (delay !== null) await ctx.queue.enqueue(w, deliveryJob({ eventId: event.id, webhookIds: [hook.id], step: step + 1 }, new Date(Date.now() + delay)));
      else if (!result.success && !unsubscribe) spent.push({ hook, result });
      if (unsubscribe) {
        await w.delete(wh).where(and(eq(wh.id, hook.id), eq(wh.kind, "PIPELINE_RUN_EVENT")));
        gone.push(hook);
      }
    }
  });
  for (const hook of gone) ctx.log.info({ webhookId: hook.id, url: hook.url }, "automation-platform hook answered 410 Gone: unsubscribed");
  for (const { hook, result } of spent) {
    ctx.log.warn({ webhookId: hook.id, eventId: event.id, attempts: step, error: result.error }, "webhook delivery failed for good: no attempt follows");
  }
}
