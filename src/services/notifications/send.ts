import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { notConfigured } from "../../adapters/notify";
import { type NotifyChannel, NotifySendError } from "../../adapters/notify/port";
import type { ServiceContext } from "../context";
import type { SendRow } from "./record";

/** One notification to one recipient: a durable job per send record. */
export const NOTIFY_SEND_JOB = "notify.send";
/**
 * Attempts before a send is given up. With the queue's backoff (5 s doubling,
 * at most 15 min a wait) twelve attempts span a bit over an hour: long enough
 * for a provider's hiccup, short enough that an alert is still news.
 */
export const SEND_ATTEMPTS = 12;
export const sendJobKey = (sendId: string) => `${NOTIFY_SEND_JOB}:${sendId}`;

export const SendPayload = z.object({ sendId: z.string().min(1) });
export type SendPayload = z.infer<typeof SendPayload>;

async function loadSend(ctx: ServiceContext, id: string): Promise<SendRow | null> {
  const s = ctx.db.t.notificationSends;
  const [row] = await ctx.db.read.select().from(s).where(eq(s.id, id));
  return row ?? null;
}

/** Updates the record while it is still pending (a send that ended is never reopened). */
async function record(ctx: ServiceContext, id: string, set: Partial<SendRow>): Promise<void> {
  const s = ctx.db.t.notificationSends;
  await ctx.db.tx((w) =>
    w
      .update(s)
      .set({ ...set, updatedAt: ctx.clock.now() })
      .where(and(eq(s.id, id), eq(s.status, "pending"))),
  );
}

/**
 * One attempt of one send. Sent: recorded with the provider's id. A failure
 * retrying cannot fix (unknown channel, invalid number, channel not
 * configured) fails the record at once; a transient one is recorded and
 * thrown, so the queue tries again with backoff. A send that is no longer
 * pending (already sent, given up) does nothing: a job may run twice.
 */
export async function deliverSend(ctx: ServiceContext, payload: SendPayload, job: { attempt: number; maxAttempts: number }): Promise<void> {
  const row = await loadSend(ctx, payload.sendId);
  if (!row || row.status !== "pending") return;
  const channel = row.channel as NotifyChannel;
  const notifier = ctx.notify[channel];
  if (!notifier) {
    ctx.metrics.notificationSend(channel, "not_configured");
    await record(ctx, row.id, { status: "failed", attempts: job.attempt, error: notConfigured(channel) });
    return;
  }
  try {
    const res = await notifier.send(row.recipient, row.message);
    ctx.metrics.notificationSend(channel, "sent");
    await record(ctx, row.id, { status: "sent", attempts: job.attempt, error: null, providerId: res.providerId, sentAt: ctx.clock.now() });
  } catch (err) {
    const e = err instanceof NotifySendError ? err : new NotifySendError(err instanceof Error ? err.message : String(err), true, { cause: err });
    ctx.metrics.notificationSend(channel, e.transient ? "transient_error" : "failed");
    if (!e.transient) {
      await record(ctx, row.id, { status: "failed", attempts: job.attempt, error: e.message });
      return;
    }
    await record(ctx, row.id, { attempts: job.attempt, error: `attempt ${job.attempt} of ${job.maxAttempts}: ${e.message}` });
    ctx.log.warn({ sendId: row.id, channel, attempt: job.attempt, err: e.message }, "notification send failed; will retry");
    throw e;
  }
}

/** The last attempt failed: the record says so, with the last error. */
export async function giveUpSend(ctx: ServiceContext, payload: SendPayload, error: Error): Promise<void> {
  await record(ctx, payload.sendId, { status: "failed", error: `gave up after ${SEND_ATTEMPTS} attempts; last error: ${error.message}` });
}

/** Start-up: each channel that is not configured is reported once (its sends will be recorded as failed, never crash anything). */
export function reportNotifyChannels(ctx: ServiceContext): void {
  for (const [channel, notifier] of Object.entries(ctx.notify) as [NotifyChannel, unknown][]) {
    if (!notifier) ctx.log.warn({ channel }, `${notConfigured(channel)}; its notifications will be recorded as failed`);
  }
}
