import type { Twilio } from "twilio";
import type RequestClient from "twilio/lib/base/RequestClient";
import { excerpt, type Notifier, NotifySendError, SEND_TIMEOUT_MS } from "./port";

type Settings = { accountSid: string; authToken: string; from: string; apiUrl: string | null };

/**
 * The twilio client builds every URL on api.twilio.com (its `edge` and
 * `region` settings only change the host under twilio.com). Its pluggable
 * HTTP client is the one supported place to send requests elsewhere: this
 * one swaps the scheme and host for the configured base (tests, a proxy),
 * keeping path, query, headers and body. The library is loaded and the
 * client built on the first send.
 */
async function openClient(settings: Settings): Promise<Twilio> {
  const twilio = (await import("twilio")).default;
  class BaseUrlRequestClient extends twilio.RequestClient {
    private readonly base: URL;
    constructor(base: string) {
      super({ timeout: SEND_TIMEOUT_MS, autoRetry: false });
      this.base = new URL(base);
    }
    override request<TData>(opts: RequestClient.RequestOptions<TData>) {
      const uri = new URL(opts.uri);
      uri.protocol = this.base.protocol;
      uri.host = this.base.host;
      return super.request<TData>({ ...opts, uri: uri.href });
    }
  }
  return twilio(settings.accountSid, settings.authToken, {
    httpClient: settings.apiUrl ? new BaseUrlRequestClient(settings.apiUrl) : undefined,
    autoRetry: false,
    timeout: SEND_TIMEOUT_MS,
  });
}

/** SMS through the twilio client's Messages resource, one message per recipient number. */
export function createSmsNotifier(settings: Settings): Notifier {
  let client: Promise<Twilio> | null = null;
  const sender = settings.from.startsWith("MG") ? { messagingServiceSid: settings.from } : { from: settings.from };
  return {
    channel: "SMS",
    async send(recipient, message) {
      try {
        const m = await (await (client ??= openClient(settings))).messages.create({ ...sender, to: recipient, body: message.text });
        return { providerId: m.sid ?? null };
      } catch (err) {
        throw classify(err);
      }
    },
  };
}

function classify(err: unknown): NotifySendError {
  const e = err as { status?: number; code?: number | string; message?: string };
  if (typeof e.status === "number") {
    // Twilio answers 4xx for what will not change (invalid number, unverified sender), 429 and 5xx for what may.
    const transient = e.status === 429 || e.status >= 500 || e.status === 408;
    const code = typeof e.code === "number" ? ` (error ${e.code})` : "";
    return new NotifySendError(`Twilio ${e.status}${code}: ${excerpt(e.message ?? "")}`, transient, { cause: err });
  }
  return new NotifySendError(`Twilio: ${excerpt(e.message ?? String(err))}`, true, { cause: err });
}
