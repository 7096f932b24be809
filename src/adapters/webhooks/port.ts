/**
 * Outgoing webhook calls. The service decides where a call may go (it
 * resolves the host and checks every address, src/services/webhooks/targets.ts);
 * the sender then connects to exactly the address it was given, so a DNS
 * answer that changes between the check and the connect cannot move the
 * call elsewhere.
 */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address the system resolver gives (/etc/hosts included). */
export type HostResolver = (host: string) => Promise<ResolvedAddress[]>;

export interface WebhookRequest {
  url: URL;
  /** The checked address to connect to; the URL's host still names the Host header and the TLS server name. */
  address: ResolvedAddress;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Bytes of the answer kept as its excerpt. */
  excerptBytes: number;
  /** Aborts the call (the job queue is stopping). */
  signal?: AbortSignal;
}

/** What came back; expected failures are data, not exceptions. */
export type WebhookResponse =
  | { ok: true; statusCode: number; retryAfter: string | null; excerpt: string; durationMs: number }
  | { ok: false; error: string; timedOut: boolean; aborted: boolean; durationMs: number };

export interface WebhookSender {
  send(req: WebhookRequest): Promise<WebhookResponse>;
  close(): void;
}

export interface WebhookSettings {
  /** Per-attempt limit: connect, send and the answer's status line and excerpt. */
  timeoutMs: number;
  /** Delay before retry 1, 2, ...; its length is the number of retries after the first attempt. */
  retryScheduleMs: number[];
  /** A receiver's Retry-After is followed up to this long. */
  retryAfterMaxMs: number;
  /** Loopback, private, link-local, ... targets allowed (tests, closed networks). */
  allowPrivateTargets: boolean;
}

/** Svix's / Standard Webhooks' schedule: 8 attempts over about 27 hours. */
export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h";
