import { createGraphqlHandler } from "../graphql/yoga";
import { createTrpcHandler } from "../trpc/handler";
import { createServiceContext, type ServiceOptions, stopServiceContext } from "./context";
import { createHttpApp } from "./http/app";
import { jobDefinitions } from "./jobs/definitions";
import { STORAGE_SWEEP_JOB } from "./services/documents/sweep";
import { readinessChecker } from "./services/health/readiness";
import { createSmtpServer } from "./smtp/server";
import { HostedSftpServer } from "./sftp/server";
import pkg from "../package.json" with { type: "json" };

/** The composition root: REST, GraphQL and tRPC mounted over the same services. */
export async function createService(opts: ServiceOptions) {
  const { config } = opts;
  const svc = await createServiceContext(opts);
  const db = svc.db;
  if (opts.startJobs !== false) {
    const { definitions, crons } = jobDefinitions(svc);
    await svc.queue.start(definitions, crons);
    // What a crash left in storage is swept at start-up too, not only on the hour (keyed: one sweep however many instances start).
    await svc.queue.add({ name: STORAGE_SWEEP_JOB, payload: null, key: STORAGE_SWEEP_JOB });
  }
  // The listeners are made below; /readyz asks them when it is called.
  const readiness = readinessChecker(svc, { sftp: () => sftp.listening, smtp: () => smtp.listening });
  const http = createHttpApp(
    svc,
    { graphql: createGraphqlHandler(svc, config), trpc: createTrpcHandler(svc, config) },
    { maxJsonBodyBytes: config.maxJsonBodyBytes, version: pkg.version, metricsToken: config.metricsToken, readiness },
  );
  // Listens only when asked (src/main.ts: SFTP_PORT; tests: port 0), so a service built for tests or the CLI opens no port.
  const sftp = new HostedSftpServer(svc, {
    dataDir: config.dataDir,
    hostKey: config.sftpHostKey,
    login: { maxFailures: config.sftpLogin.maxFailures, lockoutMs: config.sftpLogin.lockoutSeconds * 1000, failureDelayMs: config.sftpLogin.failureDelayMs },
  });
  // The inbound mail server listens only when asked (src/main.ts: SMTP_PORT; tests: port 0).
  const smtp = createSmtpServer(svc, { maxBytes: config.smtpMaxBytes, spoolDir: `${config.dataDir}/spool/smtp` });
  return {
    svc,
    http,
    smtp,
    sftp,
    /** Stops claiming jobs and lets those in hand finish (or hands them back), then stops workers and the event bus. */
    async stop(opts: { jobsTimeoutMs?: number } = {}) {
      // Both doors stop taking connections at once; mail being received is finished (stored, runs started)
      // and SFTP files being closed are stored and acknowledged (uploads not closed are aborted), all before the queue they would enqueue on stops.
      await Promise.all([smtp.close(), sftp.close()]);
      await stopServiceContext(svc, opts);
    },
    async close(opts: { jobsTimeoutMs?: number } = {}) {
      await this.stop(opts);
      await db.close();
    },
  };
}

export type { ServiceOptions };
export type Service = Awaited<ReturnType<typeof createService>>;
