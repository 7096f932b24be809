import { Webhook as Signer } from "standardwebhooks";
import pkg from "../../../package.json" with { type: "json" };
import type { ServiceContext } from "../context";
import { type AttemptOutcome, RESPONSE_EXCERPT_BYTES, type WebhookEventRow } from "./deliveries";
import type { WebhookRow } from "./record";
import { parseRetryAfter } from "./retry";
import { resolveSendTarget } from "./targets";

export interface AttemptResult extends AttemptOutcome {
  /** Refused by the target rules: final, never retried. */
  refused: boolean;
  /** The receiver answered 410 Gone. */
  gone: boolean;
  /** Cut short because the service is stopping: not an attempt, nothing is recorded. */
  aborted: boolean;
  /** The receiver's Retry-After, in ms from now. */
  retryAfterMs: number | null;
}

const USER_AGENT = `file-pipeline-service-webhooks/${pkg.version}`;

/** The Standard Webhooks headers for one attempt: a fresh timestamp, signed with the webhook's current secret. */
export function signedHeaders(secret: string, eventId: string, at: Date, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Signer(secret).sign(eventId, at, body),
  };
}

/** One attempt to deliver one event to one webhook: check the target, sign, send, classify the answer. */
export async function sendAttempt(ctx: ServiceContext, hook: WebhookRow, event: WebhookEventRow, signal?: AbortSignal): Promise<AttemptResult> {
  const r = await attemptOnce(ctx, hook, event, signal);
  if (!r.aborted) ctx.metrics.webhookAttempt(r.success ? "success" : r.refused ? "refused" : "failure");
  return r;
}

async function attemptOnce(ctx: ServiceContext, hook: WebhookRow, event: WebhookEventRow, signal?: AbortSignal): Promise<AttemptResult> {
  const base = { refused: false, gone: false, aborted: false, retryAfterMs: null, responseExcerpt: null, statusCode: null };
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    url = new URL(hook.url);
  } catch {
    return { ...base, refused: true, success: false, durationMs: 0, error: `refused: '${hook.url}' is not a URL` };
  }
  const target = await resolveSendTarget(ctx, url);
  if (!target.ok) return { ...base, refused: target.refused, success: false, durationMs: ms(), error: target.error };

  const headers = signedHeaders(ctx.secrets.open(hook.secretEnc), event.id, ctx.clock.now(), event.body);
  const res = await ctx.webhooks.sender.send({
    url,
    address: target.address,
    headers,
    body: event.body,
    timeoutMs: ctx.webhooks.settings.timeoutMs,
    excerptBytes: RESPONSE_EXCERPT_BYTES,
    signal,
  });
  if (!res.ok) return { ...base, aborted: res.aborted, success: false, durationMs: res.durationMs, error: res.error };
  const success = res.statusCode >= 200 && res.statusCode < 300;
  return {
    ...base,
    success,
    gone: res.statusCode === 410,
    statusCode: res.statusCode,
    durationMs: res.durationMs,
    responseExcerpt: res.excerpt === "" ? null : res.excerpt,
    error: success ? null : `the receiver answered ${res.statusCode}`,
    retryAfterMs: success ? null : parseRetryAfter(res.retryAfter, ctx.clock.now()),
  };
}
