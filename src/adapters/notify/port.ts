/**
 * Notification channels: one adapter per channel, each over the provider's
 * own client library (nodemailer, @slack/web-api, twilio). Adapters send one
 * message to one recipient and say whether a failure is worth retrying; the
 * job queue does the retrying (src/services/notifications/send.ts).
 */
export const NOTIFY_CHANNELS = ["EMAIL", "SLACK", "SMS"] as const;
export type NotifyChannel = (typeof NOTIFY_CHANNELS)[number];

/** What one recipient receives. `subject` is the e-mail subject (and the first line elsewhere); `html` is for e-mail only. */
export interface NotifyMessage {
  subject: string;
  text: string;
  html?: string;
}

export interface SendResult {
  /** The provider's id for the message: SMTP Message-ID, Slack message ts, Twilio message SID. */
  providerId: string | null;
}

export interface Notifier {
  readonly channel: NotifyChannel;
  /** Throws NotifySendError; anything else thrown is treated as transient. */
  send(recipient: string, message: NotifyMessage): Promise<SendResult>;
}

/** A failed send. `transient`: the same send may succeed later (network, timeout, rate limit, 5xx); otherwise retrying cannot help. */
export class NotifySendError extends Error {
  override readonly name = "NotifySendError";
  constructor(
    message: string,
    readonly transient: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The configured channels; null: not configured on this service. */
export type Notifiers = Record<NotifyChannel, Notifier | null>;

/** Per attempt, for every provider. */
export const SEND_TIMEOUT_MS = 15_000;

/** Shortens a provider's error text for the send record. */
export function excerpt(text: string, max = 500): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
