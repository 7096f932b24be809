import type { WebhookSettings } from "../../adapters/webhooks/port";

/**
 * A receiver's `Retry-After`: delay-seconds or an HTTP date (RFC 9110
 * 10.2.3), as milliseconds from `now`; a date in the past is 0. Anything else
 * is ignored (null).
 */
export function parseRetryAfter(header: string | null, now: Date): number | null {
  if (header === null) return null;
  const v = header.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]/i.test(v)) return null;
  // asctime() dates carry no zone; HTTP dates are GMT.
  const at = Date.parse(/GMT|UTC|[+-]\d{4}$/i.test(v) ? v : `${v} GMT`);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}

/**
 * The delay before the next automatic attempt, after automatic attempt
 * `attempt` (1 = the first send) failed; null when the schedule is spent.
 * A Retry-After from the receiver replaces the scheduled delay, capped at
 * `retryAfterMaxMs`; it does not add attempts.
 */
export function nextRetryDelayMs(settings: WebhookSettings, attempt: number, retryAfterMs: number | null): number | null {
  const scheduled = settings.retryScheduleMs[attempt - 1];
  if (scheduled === undefined) return null;
  if (retryAfterMs === null) return scheduled;
  return Math.min(retryAfterMs, settings.retryAfterMaxMs);
}
