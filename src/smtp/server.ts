import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { ServiceContext } from "../services/context";
import { isInboxAddress, receiveEmail } from "../services/run-path";

export interface SmtpServerOptions {
  /** Largest message: advertised as SIZE, larger ones answered 552 (and recorded). */
  maxBytes: number;
  /** Messages are spooled here while they are parsed. */
  spoolDir: string;
  /** The name in the greeting; default the host name. */
  name?: string;
  /** Simultaneous client connections (default 100); more are answered 421. */
  maxClients?: number;
  /** Recipients one message may have (default 50); more are answered 452. */
  maxRecipients?: number;
}

export interface InboundSmtpServer {
  /** Starts listening (port 0 picks a free port); answers the bound port. */
  listen(port: number, host: string): Promise<number>;
  /** The bound port, null until listening. */
  readonly port: number | null;
  /** Accepting connections (readiness): listening and not closing. */
  readonly listening: boolean;
  /** Refuses new connections and commands (421), lets messages being received finish, then closes the rest. Safe when never started. */
  close(): Promise<void>;
}

/** An error smtp-server sends as the given reply. */
function reply(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/**
 * The inbound mail server (smtp-server): accepts mail only for existing
 * EMAIL connections' inbound addresses (others: 550 at RCPT), up to
 * `maxBytes` (552), and hands each message to the e-mail inbox service.
 * Inbound mail is not authenticated (AUTH is off, as on any MX); STARTTLS is
 * off because the service has no certificate of its own to offer; see
 * docs/decisions/email.md.
 */
export function createSmtpServer(svc: ServiceContext, opts: SmtpServerOptions): InboundSmtpServer {
  const log = svc.log.child({ component: "smtp" });
  const inFlight = new Set<Promise<unknown>>();
  const maxRecipients = opts.maxRecipients ?? 50;

  const server = new SMTPServer({
    name: opts.name,
    banner: "File Pipeline Service inbound mail",
    size: opts.maxBytes,
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    disableReverseLookup: true,
    maxClients: opts.maxClients ?? 100,
    socketTimeout: 60_000,
    closeTimeout: 30_000,
    logger: false,

    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= maxRecipients) return callback(reply(452, `too many recipients (at most ${maxRecipients})`));
      isInboxAddress(svc, address.address).then(
        (ok) => {
          if (ok) return callback();
          log.info({ recipient: address.address, remoteAddress: session.remoteAddress }, "mail refused: no such inbox");
          callback(reply(550, `no such inbox: <${address.address}>`));
        },
        (err) => {
          log.error({ err }, "inbox lookup failed");
          callback(reply(451, "temporary failure looking up the recipient; try again later"));
        },
      );
    },

    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      // The envelope is reset once this callback is called: copy what is needed now.
      const recipients = session.envelope.rcptTo.map((r) => r.address);
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address || null : null;
      const work = receiveEmail(svc, {
        recipients,
        mailFrom,
        message: stream,
        maxBytes: opts.maxBytes,
        spoolDir: opts.spoolDir,
        remoteAddress: session.remoteAddress,
      }).then(
        (receipt) => {
          log.info(
            { recipients: recipients.length, size: receipt.size, runs: receipt.runIds.length, arrivals: receipt.arrivals.length, tooLarge: receipt.tooLarge },
            "mail received",
          );
          svc.metrics.smtpMessage(receipt.tooLarge ? "too_large" : receipt.inboxes === 0 ? "rejected" : "accepted");
          if (receipt.tooLarge) return callback(reply(552, `message exceeds the fixed maximum message size (${opts.maxBytes} bytes)`));
          if (receipt.inboxes === 0) return callback(reply(550, "no such inbox"));
          // Refusals by an inbox's rules are recorded, not told to the sender: a 250 says only that the message arrived.
          callback(null, "OK: message received");
        },
        (err) => {
          // Nothing was acknowledged: the sending server keeps the message and tries again.
          log.error({ err }, "mail could not be processed");
          svc.metrics.smtpMessage("failed");
          stream.resume();
          callback(reply(451, "temporary failure processing the message; try again later"));
        },
      );
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    },
  });
  server.on("error", (err) => log.warn({ err }, "smtp connection error"));

  let port: number | null = null;
  let closing: Promise<void> | null = null;
  return {
    get port() {
      return port;
    },
    get listening() {
      return port !== null && closing === null && server.server.listening;
    },
    async listen(p, host) {
      await new Promise<void>((resolve, reject) => {
        server.server.once("error", reject);
        server.listen(p, host, () => {
          server.server.off("error", reject);
          resolve();
        });
      });
      port = (server.server.address() as AddressInfo).port;
      return port;
    },
    close() {
      closing ??= (async () => {
        if (port === null) return;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Messages being processed get their reply; then idle connections are told 421 and closed.
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        for (const connection of server.connections) {
          connection.send(421, "Server shutting down");
          connection.close();
        }
        await closed;
      })();
      return closing;
    },
  };
}
