import { createGraphqlWebSocket } from "../graphql/ws";
import { createService, type Service } from "./app";
import { ConfigError, parseConfig } from "./config";

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
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  service?.svc.log.info({ signal }, "shutting down");
  await server?.stop();
  await service?.close();
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
  // Bun's default (10 s) cut a partner's upload that paused for 10 s and any answer that took longer (a test of a
  // slow SFTP server, a delta of large runs). Event streams have no limit at all (graphql/ws.ts).
  idleTimeout: config.httpIdleTimeoutSeconds,
  // GraphQL subscriptions over WebSocket share /graphql with HTTP.
  ...createGraphqlWebSocket(app.svc, config).serve((request) => app.http.handle(request)),
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
  { url: `http://${server.hostname}:${server.port}`, sftpPort, sftpHostKey: service.sftp.hostKey?.fingerprint, database: config.database.kind, dataDir: config.dataDir },
  "file pipeline service listening",
);
service.svc.log.info({ smtpPort, maxBytes: config.smtpMaxBytes }, "inbound SMTP server listening");
