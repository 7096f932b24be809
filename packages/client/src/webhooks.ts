import { Webhook } from "standardwebhooks";

/** The body of a webhook delivery (`docs/guide/webhooks.md`). */
export interface RunEventPayload {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  [k: string]: unknown;
}

/**
 * Checks a delivery's Standard Webhooks signature (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`) with the webhook's `whsec_...`
 * secret and answers the parsed payload; throws when the signature is wrong
 * or the timestamp is more than five minutes away. Pass the body exactly as
 * received (a string), before any JSON parsing.
 */
export function verifyWebhook(secret: string, body: string, headers: Headers | Record<string, string>): RunEventPayload {
  const h = headers instanceof Headers ? Object.fromEntries(headers.entries()) : Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return new Webhook(secret).verify(body, h) as RunEventPayload;
}
