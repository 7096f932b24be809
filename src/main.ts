import { createGraphqlWebSocket } from "../graphql/ws";
import { createService, type Service } from "./app";
import { ConfigError, parseConfig } from "./config";
import { openStreams } from "./transport/open-streams";

let config: ReturnType<typeof parseConfig>;
try {
  config = parseConfig(process.env);
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}

// Signal handlers first: a stop request that arrives while starting still ends cleanly.
let service: Service | undefined;
let server: ReturnType<typeof Bun.serve> | undefined;
let stopping = false;
const streams = openStreams();
/**
 * Graceful stop within SHUTDOWN_TIMEOUT_SECONDS: no door takes anything new (HTTP, SFTP, SMTP stop listening at
 * once). HTTP requests in flight get up to half the time to finish (an upload acknowledged is a run row and its job,
 * committed together, so nothing acknowledged is lost), and so do SFTP uploads whose close is being answered; open subscriptions are not waited for: they are cut once the
 * other requests are done, and clients reconnect. Jobs in hand get what is left to finish and are otherwise handed
 * back to the queue for the next start. Past the deadline the process exits anyway, with status 1.
 */
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  const budgetMs = config.shutdownTimeoutSeconds * 1000;
  const deadline = Date.now() + budgetMs;
  const log = service?.svc.log;
  setTimeout(() => {
    log?.error({ signal, timeoutSeconds: config.shutdownTimeoutSeconds }, "shutdown timed out; exiting with work unfinished");
    process.exit(1);
  }, budgetMs);
  log?.info({ signal, timeoutSeconds: config.shutdownTimeoutSeconds }, "shutting down");
  // SFTP files whose close is being answered (stored, runs starting) get up to half the time to be acknowledged.
  const doors = Promise.all([service?.smtp.close(), service?.sftp.close({ graceMs: budgetMs / 2 })]);
  if (server) {
    let drained = false;
    void server.stop(false).then(() => (drained = true));
    // Requests other than subscriptions (which never end by themselves) get up to half the time.
    const httpDeadline = Date.now() + budgetMs / 2;
    while (!drained && server.pendingRequests > streams.open && Date.now() < httpDeadline) await Bun.sleep(20);
    if (!drained && server.pendingRequests > streams.open) log?.warn("HTTP requests still open at half the shutdown time; closing them");
    await server.stop(true);
  }
  await doors;
  // What is left, less a second for the database and worker threads to close.
  await service?.close({ jobsTimeoutMs: Math.max(0, deadline - Date.now() - 1000) });
  log?.info({ signal, ms: budgetMs - (deadline - Date.now()) }, "stopped");
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));

service = await createService({ config });
const app = service;
server = Bun.serve({
  port: config.port,
  hostname: config.host,
  // JSON bodies are limited per route (MAX_JSON_BODY_BYTES); file uploads stream and may be large.
  maxRequestBodySize: 8 * 1024 ** 3,
  // Never Bun's development error page (it shows source lines to the client) whatever NODE_ENV says: every error is answered by the app's own error table.
  development: false,
  // Bun's default (10 s) cut a partner's upload that paused for 10 s and any answer that took longer (a test of a
  // slow SFTP server, a delta of large runs). Event streams have no limit at all (graphql/ws.ts).
  idleTimeout: config.httpIdleTimeoutSeconds,
  // GraphQL subscriptions over WebSocket share /graphql with HTTP.
  ...createGraphqlWebSocket(app.svc, config).serve((request) => streams.track(request, (r) => app.http.handle(r))),
});
// The hosted SFTP server on SFTP_PORT (0: any free port, reported below). A port in use stops start-up.
let sftpPort: number;
try {
  sftpPort = await service.sftp.listen(config.sftpPort, config.host);
} catch (e) {
  console.error(`the hosted SFTP server could not start on ${config.host}:${config.sftpPort} (SFTP_PORT): ${(e as Error).message}`);
  stopping = true;
  await server.stop();
  await service.close();
  process.exit(1);
}
// The inbound mail server on SMTP_PORT (0: any free port, reported below). A port in use stops start-up.
let smtpPort: number;
try {
  smtpPort = await service.smtp.listen(config.smtpPort, config.host);
} catch (e) {
  console.error(`the inbound SMTP server could not start on ${config.host}:${config.smtpPort} (SMTP_PORT): ${(e as Error).message}`);
  stopping = true;
  await server.stop();
  await service.close();
  process.exit(1);
}
service.svc.log.info(
  { url: `http://${server.hostname}:${server.port}`, pid: process.pid, sftpPort, sftpHostKey: service.sftp.hostKey?.fingerprint, database: config.database.kind, dataDir: config.dataDir },
  "file pipeline service listening",
);
service.svc.log.info({ smtpPort, maxBytes: config.smtpMaxBytes }, "inbound SMTP server listening");
