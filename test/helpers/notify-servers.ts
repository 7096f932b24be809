import { simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

/**
 * Local stand-ins for the notification providers, reached by the real client
 * libraries: an SMTP server (smtp-server) that captures each message, and
 * HTTP servers that answer as Slack's Web API (`POST /api/chat.postMessage`)
 * and Twilio's Messages API (`POST /2010-04-01/Accounts/{sid}/Messages.json`)
 * do. Each records what it received; a test can script a reply per request.
 */

export interface CapturedMail {
  from: string;
  to: string[];
  auth: string | null;
  subject: string;
  text: string;
  html: string;
  messageId: string;
}

export interface CapturedCall {
  path: string;
  authorization: string | null;
  /** The form body, decoded. */
  params: Record<string, string>;
}

/** A scripted reply: status and JSON body. Return undefined for the default answer. */
export type Script = (call: CapturedCall, n: number) => { status: number; body: unknown } | undefined;

export const SMTP_USER = "notify";
export const SMTP_PASS = "smtp-secret";
export const SLACK_TOKEN = "xoxb-test-token";
export const TWILIO_SID = "AC0123456789abcdef0123456789abcdef";
export const TWILIO_TOKEN = "twilio-token";
export const TWILIO_FROM = "+15550000000";
export const EMAIL_FROM = "File Pipeline <alerts@fps.test>";

export class NotifyServers {
  readonly mails: CapturedMail[] = [];
  readonly slackCalls: CapturedCall[] = [];
  readonly twilioCalls: CapturedCall[] = [];
  /** Recipients the SMTP server refuses with 550 (after RCPT TO). */
  readonly refusedMailboxes = new Set<string>();
  slackScript: Script = () => undefined;
  twilioScript: Script = () => undefined;

  private constructor(
    private readonly smtp: SMTPServer,
    readonly smtpPort: number,
    private readonly slack: ReturnType<typeof Bun.serve>,
    private readonly twilio: ReturnType<typeof Bun.serve>,
  ) {}

  static async start(): Promise<NotifyServers> {
    let self!: NotifyServers;
    const smtp = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onAuth(auth, _session, cb) {
        if (auth.username === SMTP_USER && auth.password === SMTP_PASS) cb(null, { user: auth.username });
        else cb(new Error("invalid credentials"));
      },
      onRcptTo(address, _session, cb) {
        if (self.refusedMailboxes.has(address.address)) {
          const err = new Error(`mailbox ${address.address} unavailable`) as Error & { responseCode: number };
          err.responseCode = 550;
          cb(err);
        } else cb();
      },
      onData(stream, session, cb) {
        // The envelope is reset after this callback: copy it now.
        const envelope = structuredClone(session.envelope);
        const user = (session.user as string | undefined) ?? null;
        simpleParser(stream)
          .then((m) => {
            self.mails.push({
              from: envelope.mailFrom ? envelope.mailFrom.address : "",
              to: envelope.rcptTo.map((r) => r.address),
              auth: user,
              subject: m.subject ?? "",
              text: m.text ?? "",
              html: typeof m.html === "string" ? m.html : "",
              messageId: m.messageId ?? "",
            });
            cb();
          })
          .catch(cb);
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()));
    const smtpPort = (smtp.server.address() as { port: number }).port;

    const form = async (req: Request) => Object.fromEntries(new URLSearchParams(await req.text()));
    let ts = 1_700_000_000;
    const slack = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const url = new URL(req.url);
        const call: CapturedCall = { path: url.pathname, authorization: req.headers.get("authorization"), params: await form(req) };
        self.slackCalls.push(call);
        const n = self.slackCalls.filter((c) => c.params.channel === call.params.channel).length;
        const scripted = self.slackScript(call, n);
        if (scripted) return Response.json(scripted.body, { status: scripted.status });
        if (url.pathname !== "/api/chat.postMessage") return Response.json({ ok: false, error: "unknown_method" });
        if (call.authorization !== `Bearer ${SLACK_TOKEN}`) return Response.json({ ok: false, error: "invalid_auth" });
        ts += 1;
        return Response.json({ ok: true, channel: call.params.channel, ts: `${ts}.000100`, message: { text: call.params.text } });
      },
    });
    let sid = 0;
    const twilio = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const url = new URL(req.url);
        const call: CapturedCall = { path: url.pathname, authorization: req.headers.get("authorization"), params: await form(req) };
        self.twilioCalls.push(call);
        const n = self.twilioCalls.filter((c) => c.params.To === call.params.To).length;
        const scripted = self.twilioScript(call, n);
        if (scripted) return Response.json(scripted.body, { status: scripted.status });
        const basic = `Basic ${Buffer.from(`${TWILIO_SID}:${TWILIO_TOKEN}`).toString("base64")}`;
        if (call.authorization !== basic) return Response.json({ code: 20003, message: "Authenticate", status: 401 }, { status: 401 });
        if (req.method !== "POST" || url.pathname !== `/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`) {
          return Response.json({ code: 20404, message: "The requested resource was not found", status: 404 }, { status: 404 });
        }
        sid += 1;
        const now = new Date().toUTCString();
        return Response.json(
          {
            sid: `SM${String(sid).padStart(32, "0")}`,
            account_sid: TWILIO_SID,
            to: call.params.To,
            from: call.params.From,
            body: call.params.Body,
            status: "queued",
            num_segments: "1",
            direction: "outbound-api",
            api_version: "2010-04-01",
            date_created: now,
            date_updated: now,
            uri: `/2010-04-01/Accounts/${TWILIO_SID}/Messages/SM${sid}.json`,
          },
          { status: 201 },
        );
      },
    });
    self = new NotifyServers(smtp, smtpPort, slack, twilio);
    return self;
  }

  /** Service configuration pointing every channel at these servers. */
  env(): Record<string, string> {
    return {
      NOTIFY_SMTP_URL: `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${this.smtpPort}`,
      NOTIFY_EMAIL_FROM: EMAIL_FROM,
      NOTIFY_SLACK_TOKEN: SLACK_TOKEN,
      NOTIFY_SLACK_API_URL: `http://127.0.0.1:${this.slack.port}/api/`,
      NOTIFY_TWILIO_ACCOUNT_SID: TWILIO_SID,
      NOTIFY_TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
      NOTIFY_TWILIO_FROM: TWILIO_FROM,
      NOTIFY_TWILIO_API_URL: `http://127.0.0.1:${this.twilio.port}`,
    };
  }

  async close(): Promise<void> {
    this.slack.stop(true);
    this.twilio.stop(true);
    await new Promise<void>((resolve) => this.smtp.close(() => resolve()));
  }
}
