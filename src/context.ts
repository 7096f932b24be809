import { type Database, openDatabase } from "../db/client";
import { READ_CACHE_TOPIC } from "../db/read-cache";
import { createSecretBox, loadOrCreateKeyFile } from "./adapters/crypto/secret-box";
import type { SftpClientPort } from "./adapters/sftp/port";
import { createEventBus } from "./adapters/events";
import { createPrometheusMetrics } from "./adapters/metrics/prometheus";
import { createNotifiers } from "./adapters/notify";
import { sftpClient } from "./adapters/sftp/client";
import { createObjectStore, storageConfigFrom } from "./adapters/storage";
import { createEnginePool } from "./engine/pool";
import { systemResolver } from "./adapters/webhooks/dns";
import { createHttpSender } from "./adapters/webhooks/http-sender";
import { createJobQueue } from "./jobs";
import type { Config } from "./config";
import { type Clock, systemClock } from "./domain/clock";
import { createLogger, type Logger } from "./logger";
import type { ServiceContext } from "./services/context";
import { startKeyCache } from "./services/keys/cache";
import { RateLimits } from "./services/rate-limits";

export interface ServiceOptions {
  config: Config;
  clock?: Clock;
  log?: Logger;
  db?: Database;
  sftp?: SftpClientPort;
  /** false: do not claim jobs (the admin CLI, tests that drive jobs by hand). Default true. */
  startJobs?: boolean;
}

/** The adapters, wired once; the admin CLI uses this alone, the service mounts its transports on it. */
export async function createServiceContext(opts: ServiceOptions): Promise<ServiceContext> {
  const { config } = opts;
  const db = opts.db ?? (await openDatabase(config.database, { readCacheTtlMs: config.readCacheTtlMs, silenceMs: config.databaseStallMs }));
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel);
  const encryptionKey = config.encryptionKey ?? loadOrCreateKeyFile(config.dataDir);
  const storageConfig = storageConfigFrom(config, encryptionKey);
  const events = await createEventBus({ db, log });
  // Service and admin CLI alike: the CLI's key and workspace changes reach the running instances.
  startKeyCache({ db, events, log, ttlMs: config.keyCacheTtlMs });
  // Another instance wrote what a read cache may hold (db/read-cache.ts), or its signals may have been missed.
  events.onSignal?.(READ_CACHE_TOPIC, () => db.clearReadCaches());
  const queue = await createJobQueue({ db, log, clock, concurrency: config.jobConcurrency });
  const metrics = createPrometheusMetrics();
  metrics.setQueueDepth(() => queue.waiting());
  return {
    db,
    clock,
    secrets: createSecretBox(encryptionKey),
    log,
    sftp: opts.sftp ?? sftpClient,
    storage: createObjectStore(storageConfig),
    storageConfig,
    queue,
    metrics,
    events,
    // Worker threads start on first use, so the admin CLI never spawns them.
    engine: createEnginePool({
      size: config.workers,
      limits: { maxDecompressedBytes: config.decompression.maxBytes, maxDecompressionRatio: config.decompression.maxRatio },
    }),
    notify: createNotifiers(config.notify),
    webhooks: { sender: createHttpSender(), resolve: systemResolver(), settings: config.webhooks },
    rateLimits: new RateLimits({ db, settings: config.rateLimits, clock, log }),
    settings: {
      publicUrl: config.publicUrl,
      sftpHost: config.sftpHost,
      sftpPort: config.sftpPort,
      smtpHost: new URL(config.publicUrl).hostname,
      smtpPort: config.smtpPort,
      sftpPoll: config.sftpPoll,
      emailDomain: config.emailDomain,
      fileLinkTtlSeconds: config.fileLinkTtlSeconds,
      documentsSingleUploadMaxBytes: config.documentsSingleUploadMaxBytes,
      maxUploadBytes: config.maxUploadBytes,
      preview: config.preview,
      progressIntervalMs: config.progressIntervalMs,
      outboundUploadTtlSeconds: config.outboundUploadTtlSeconds,
      outboundMaxPartBytes: config.outboundMaxPartBytes,
      auditRetentionDays: config.auditRetentionDays,
      archive: { maxMembers: config.maxArchiveMembers, maxBytes: config.decompression.maxBytes, maxRatio: config.decompression.maxRatio },
      sessions: config.sessions,
    },
  };
}

/** Releases what the context holds beyond the database: jobs in hand, worker threads, the event bus connection. */
export async function stopServiceContext(svc: ServiceContext, opts: { jobsTimeoutMs?: number } = {}): Promise<void> {
  // Jobs in hand get this long to finish; the rest are handed back to the queue, their attempt not counted.
  await svc.queue.stop(opts.jobsTimeoutMs);
  // Independent of each other, so side by side; each is bounded (a database that does not answer holds none of them up
  // for long: the rate limits' last share gives up after 2 s, the event bus's UNLISTEN after 1 s).
  await Promise.all([svc.rateLimits.close(), svc.engine.close(), svc.events.close()]);
  svc.webhooks.sender.close();
}
