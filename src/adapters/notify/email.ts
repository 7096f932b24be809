import type { Transporter } from "nodemailer";
import { excerpt, type Notifier, NotifySendError, SEND_TIMEOUT_MS } from "./port";

/** Connection-level failures nodemailer reports with these codes are worth another try. */
const TRANSIENT_CODES = new Set(["ECONNECTION", "ETIMEDOUT", "ESOCKET", "EDNS", "ECONNREFUSED", "ECONNRESET", "EPROTOCOL"]);

/**
 * EMAIL over SMTP with nodemailer: one connection per message (alerts are
 * few; nothing is held open between them). The URL carries host, port, TLS
 * (smtps: from the start, smtp: STARTTLS when offered) and credentials.
 * nodemailer is loaded on the first send, so that processes that never send
 * (the admin CLI) do not pay for it.
 */
export function createEmailNotifier(settings: { smtpUrl: string; from: string }): Notifier {
  let transport: Promise<Transporter> | null = null;
  const open = () =>
    (transport ??= import("nodemailer").then((nodemailer) =>
      nodemailer.createTransport({
        url: settings.smtpUrl,
        connectionTimeout: SEND_TIMEOUT_MS,
        greetingTimeout: SEND_TIMEOUT_MS,
        socketTimeout: SEND_TIMEOUT_MS,
      }),
    ));
  return {
    channel: "EMAIL",
    async send(recipient, message) {
      try {
        const info = await (await open()).sendMail({ from: settings.from, to: recipient, subject: message.subject, text: message.text, html: message.html });
        return { providerId: typeof info.messageId === "string" ? info.messageId : null };
      } catch (err) {
        throw classify(err);
      }
    },
  };
}

function classify(err: unknown): NotifySendError {
  const e = err as { code?: string; responseCode?: number; response?: string; message?: string };
  const text = excerpt(e.response ?? e.message ?? String(err));
  // SMTP replies: 4xx is "try again later", 5xx is final (unknown mailbox, refused), except a refused login, which an operator fixes.
  if (typeof e.responseCode === "number") {
    const transient = e.responseCode < 500 || e.code === "EAUTH";
    return new NotifySendError(`SMTP ${e.responseCode}: ${text}`, transient, { cause: err });
  }
  return new NotifySendError(`SMTP: ${text}`, e.code === undefined || TRANSIENT_CODES.has(e.code) || e.code === "EAUTH", { cause: err });
}
