import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { CronExpressionParser } from "cron-parser";
import { z } from "zod";
import type { S3Settings } from "./adapters/storage/port";
import { DEFAULT_RETRY_SCHEDULE, type WebhookSettings } from "./adapters/webhooks/port";

/** Environment, parsed once at start. A bad value stops the process with a message naming the variable. */
const port = (fallback: number) =>
  z.coerce
    .number({ error: "must be a port number" })
    .int("must be a whole number")
    .min(0, "must be between 0 and 65535")
    .max(65535, "must be between 0 and 65535")
    .default(fallback);

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** "5s,5m,2h": delays with a unit (ms, s, m, h, d), comma-separated; "none" is the empty list. */
const Durations = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      if (v.trim().toLowerCase() === "none") return [];
      const out: number[] = [];
      for (const part of v.split(",").map((p) => p.trim())) {
        const m = /^(\d+)(ms|s|m|h|d)$/.exec(part);
        const ms = m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : Number.NaN;
        if (!(ms <= 7 * 86_400_000)) {
          ctx.addIssue({ code: "custom", message: `'${part}' is not a duration of at most 7d (write e.g. 5s,5m,30m,2h), or write none` });
          return z.NEVER;
        }
        out.push(ms);
      }
      if (out.length > 50) ctx.addIssue({ code: "custom", message: "must have at most 50 entries" });
      return out;
    });

const Env = z.object({
  PORT: port(3000),
  HOST: z.string().min(1).default("0.0.0.0"),
  DATA_DIR: z.string().min(1, "must not be empty").default("./data"),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/.+/, "must be a postgres:// URL (leave it unset for the embedded SQLite database)")
    .optional(),
  SFTP_PORT: port(2222),
  SMTP_PORT: port(2525),
  /** Largest e-mail the inbound SMTP server accepts (advertised as SIZE; larger mail is refused with 552 and recorded). */
  SMTP_MAX_BYTES: z.coerce.number().int("must be a whole number").positive("must be a positive number of bytes").default(25 * 1024 ** 2),
  /** When set, `GET /metrics` answers only `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().regex(/^[\x21-\x7e]{16,256}$/, "must be 16 to 256 visible ASCII characters (openssl rand -hex 32)").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** base64 of 32 random bytes; encrypts stored credentials and webhook secrets. */
  ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, "base64").length === 32, "must be 32 bytes, base64-encoded (openssl rand -base64 32)")
    .optional(),
  PUBLIC_URL: z.url({ error: "must be an absolute http(s) URL" }).optional(),
  SFTP_HOST: z.string().min(1).optional(),
  /** When the customer-SFTP poller runs: five cron fields (UTC), or "off" on an instance that must not poll. */
  SFTP_POLL_CRON: z
    .string()
    .trim()
    .refine((v) => v === "off" || validCron(v), 'must be five cron fields (e.g. "* * * * *") or "off"')
    .default("* * * * *"),
  /** A file on a customer's server is taken once it was seen unchanged (size, mtime) at least this long ago. */
  SFTP_POLL_SETTLE_SECONDS: z.coerce.number().int("must be a whole number").min(0, "must be 0 or more").max(86_400, "must be at most 86400").default(30),
  /** The hosted SFTP server's private host key: a file path, or the key itself (PEM or OpenSSH); unset, one is generated in DATA_DIR. */
  SFTP_HOST_KEY: z.string().min(1).optional(),
  /** Failed hosted-SFTP logins from one address within SFTP_LOCKOUT_SECONDS before the address is refused. */
  SFTP_MAX_LOGIN_FAILURES: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(1000, "must be at most 1000").default(10),
  /** How long an address stays refused after too many failures (and the window in which failures count). */
  SFTP_LOCKOUT_SECONDS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(7 * 24 * 3600, "must be at most 604800 (7 days)").default(900),
  /** Each failed login is answered after failures x this many milliseconds (at most 10 s). */
  SFTP_FAILURE_DELAY_MS: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").max(10_000, "must be at most 10000").default(500),
  EMAIL_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+$/i, "must be a domain name")
    .default("inbound.localhost"),
  MAX_JSON_BODY_BYTES: z.coerce.number().int().positive("must be a positive number of bytes").default(1024 * 1024),
  /** Seconds an HTTP connection may send and receive nothing before it is closed (Bun.serve's idleTimeout; its own default is 10). */
  /** On SIGTERM/SIGINT the process drains and exits within this many seconds (a supervisor's kill grace period is often 30). */
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(3600, "must be at most 3600").default(25),
  HTTP_IDLE_TIMEOUT_SECONDS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(255, "must be at most 255 (Bun's limit)").default(120),
  /** Bun Worker threads that parse, map and validate files; default one per core. */
  WORKERS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(64, "must be at most 64").optional(),
  /** Jobs one instance runs at once (runs, deliveries); default twice WORKERS. */
  JOB_CONCURRENCY: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(256, "must be at most 256").optional(),
  /** Largest file accepted by POST /pipelines/{id}/runs. */
  MAX_UPLOAD_BYTES: z.coerce.number().int().positive("must be a positive number of bytes").default(5 * 1024 ** 3),
  /** Most bytes a compressed input (gzip, workbook entries) may inflate to; default: as much as one uncompressed upload (MAX_UPLOAD_BYTES' default). */
  MAX_DECOMPRESSED_BYTES: z.coerce.number().int("must be a whole number").positive("must be a positive number of bytes").default(5 * 1024 ** 3),
  /** Most bytes inflated per compressed byte, judged past the first 4 MiB: stops decompression bombs early. */
  MAX_DECOMPRESSION_RATIO: z.coerce.number().int("must be a whole number").min(2, "must be at least 2").max(100_000, "must be at most 100000").default(100),
  /** Largest sample POST /pipelines/{id}/preview and POST /schemas/infer read; a larger file is cut there (`truncated`). */
  PREVIEW_MAX_BYTES: z.coerce.number().int("must be a whole number").min(1024, "must be at least 1024").max(1024 ** 3, "must be at most 1073741824 (1 GiB)").default(4 * 1024 ** 2),
  /** A preview or schema inference stops reading its sample after this many milliseconds (`timedOut`). */
  /** How often a processing run's record (and its subscribers) get its progress. */
  PROGRESS_INTERVAL_MS: z.coerce.number().int("must be a whole number").min(100, "must be at least 100").max(60_000, "must be at most 60000").default(1000),
  PREVIEW_TIMEOUT_MS: z.coerce.number().int("must be a whole number").min(100, "must be at least 100").max(300_000, "must be at most 300000").default(10_000),
  /** Most members a zip archive may hold; checked from its central directory before anything is inflated. */
  MAX_ARCHIVE_MEMBERS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(100_000, "must be at most 100000").default(1000),
  /** Lifetime of presigned file links, in seconds. */
  FILE_LINK_TTL_SECONDS: z.coerce.number().int().min(1, "must be at least 1").max(7 * 24 * 3600, "must be at most 604800 (7 days)").default(3600),
  /** How long an API key lookup is reused when no change was signalled (docs/decisions/hot-path.md); 0 looks every key up on every request. */
  KEY_CACHE_TTL_MS: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").max(60_000, "must be at most 60000").default(1000),
  READ_CACHE_TTL_MS: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").max(60_000, "must be at most 60000").default(1000),
  /** Postgres: a query whose connection carries nothing back for this long fails, answered 503 (db/pg-silence.ts); 0: never. */
  DATABASE_STALL_TIMEOUT_SECONDS: z.coerce.number().min(0, "must be at least 0").max(3_600, "must be at most 3600").default(5),
  /** Requests one API key may make per RATE_LIMIT_WINDOW_SECONDS (docs/decisions/rate-limits.md); 0: no limit. */
  RATE_LIMIT_REQUESTS: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").default(60_000),
  /** Bytes one API key may upload per window (request bodies: files, parts, JSON); 0: no limit. */
  RATE_LIMIT_UPLOAD_BYTES: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").default(20 * 1024 ** 3),
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(86_400, "must be at most 86400 (1 day)").default(60),
  /** Requests with an unknown or invalid API key one client address may make per window; 0: no limit. */
  RATE_LIMIT_AUTH_FAILURES: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").default(100),
  /** Postgres: how often an instance adds its counts to the shared ones and reads theirs back. */
  RATE_LIMIT_SYNC_MS: z.coerce.number().int("must be a whole number").min(10, "must be at least 10").max(10_000, "must be at most 10000").default(100),
  /** Audit records older than this many days are deleted (daily). */
  AUDIT_RETENTION_DAYS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(36_500, "must be at most 36500").default(365),
  /** Documents: an upload up to this many bytes gets one presigned PUT (`single`), a larger one `multipart` (at most S3's 5 GiB PutObject limit). */
  DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int("must be a whole number")
    .min(1, "must be at least 1")
    .max(5 * 1024 ** 3, "must be at most 5368709120 (5 GiB, S3's limit for one PUT)")
    .default(64 * 1024 ** 2),
  /** Outbound upload sessions not completed within this many seconds expire and their parts are deleted. */
  OUTBOUND_UPLOAD_TTL_SECONDS: z.coerce
    .number()
    .int("must be a whole number")
    .min(60, "must be at least 60")
    .max(30 * 24 * 3600, "must be at most 2592000 (30 days)")
    .default(24 * 3600),
  /** Largest body of one outbound upload part (PUT /outbound/uploads/{uploadId}/parts/{n}). */
  OUTBOUND_MAX_PART_BYTES: z.coerce.number().int().positive("must be a positive number of bytes").max(128 * 1024 ** 2, "must be at most 134217728 (128 MiB)").default(16 * 1024 ** 2),
  /** A dashboard session not used for this many minutes ends (idle expiry). */
  SESSION_IDLE_MINUTES: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(30 * 24 * 60, "must be at most 43200 (30 days)").default(120),
  /** A dashboard session ends this many hours after log-in, used or not (absolute expiry). */
  SESSION_MAX_HOURS: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(90 * 24, "must be at most 2160 (90 days)").default(168),
  /** Per-attempt limit of a webhook delivery: connect, send and the receiver's answer. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int("must be a whole number").min(10, "must be at least 10").max(300_000, "must be at most 300000 (5 minutes)").default(15_000),
  /** Delays before the retries of a failed webhook delivery (docs/decisions/webhooks.md); `none`: no retries. */
  WEBHOOK_RETRY_SCHEDULE: Durations(DEFAULT_RETRY_SCHEDULE),
  /** A receiver's Retry-After is followed up to this many seconds. */
  WEBHOOK_RETRY_AFTER_MAX_SECONDS: z.coerce.number().int("must be a whole number").min(0, "must be at least 0").max(7 * 24 * 3600, "must be at most 604800 (7 days)").default(36_000),
  /** true: webhook targets may be loopback, private, link-local, ... addresses (tests, closed networks). */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: z.enum(["true", "false", "1", "0"], { error: "must be true or false" }).optional(),
  /** Local disk: files the store writes stay in the page cache once on disk (true), or are dropped from it (false; src/adapters/storage/page-cache.ts). */
  STORAGE_CACHE_WRITES: z.enum(["true", "false", "1", "0"], { error: "must be true or false" }).default("false"),
  /** Setting S3_BUCKET moves every object (runs, files, documents, outbound) to S3; unset, they stay under DATA_DIR/objects. */
  S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "must be an S3 bucket name").optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** For S3-compatible services (MinIO, R2, ...); unset for AWS. */
  S3_ENDPOINT: z.url({ error: "must be an absolute http(s) URL" }).optional(),
  S3_FORCE_PATH_STYLE: z.enum(["true", "false", "1", "0"], { error: "must be true or false" }).optional(),
  /** Both or neither; neither uses the SDK's default chain (environment, instance role, ...). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Notification e-mail: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://...:465 (TLS from the start); unset, EMAIL notifications are recorded as failed. */
  NOTIFY_SMTP_URL: z.string().regex(/^smtps?:\/\/[^/]+/, "must be an smtp:// or smtps:// URL (smtp://user:pass@host:587)").optional(),
  /** The From of notification e-mails, e.g. "File Pipeline <alerts@example.com>". */
  NOTIFY_EMAIL_FROM: z.string().min(3).optional(),
  /** Slack bot token (xoxb-...) for SLACK notifications. */
  NOTIFY_SLACK_TOKEN: z.string().min(1).optional(),
  /** Slack Web API base; changed only for tests or a proxy. */
  NOTIFY_SLACK_API_URL: z.url({ error: "must be an absolute http(s) URL" }).default("https://slack.com/api/"),
  /** Twilio account, token and sender (E.164 number or a messaging service SID, MG...) for SMS notifications: all three or none. */
  NOTIFY_TWILIO_ACCOUNT_SID: z.string().regex(/^AC[0-9a-fA-F]{32}$/, "must be a Twilio account SID (AC and 32 hex digits)").optional(),
  NOTIFY_TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  NOTIFY_TWILIO_FROM: z
    .string()
    .regex(/^(\+[1-9]\d{6,14}|MG[0-9a-fA-F]{32})$/, "must be an E.164 number (+15551234567) or a messaging service SID (MG and 32 hex digits)")
    .optional(),
  /** Twilio API base (scheme and host); changed only for tests or a proxy. */
  NOTIFY_TWILIO_API_URL: z.url({ error: "must be an absolute http(s) URL" }).optional(),
});

function validCron(v: string): boolean {
  if (v.split(/\s+/).length !== 5) return false;
  try {
    CronExpressionParser.parse(v, { tz: "UTC" });
    return true;
  } catch {
    return false;
  }
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  database: { kind: "sqlite"; path: string } | { kind: "pg"; url: string };
  sftpPort: number;
  smtpPort: number;
  smtpMaxBytes: number;
  logLevel: z.infer<typeof Env>["LOG_LEVEL"];
  /** `GET /metrics` requires this bearer token; null: open. */
  metricsToken: string | null;
  encryptionKey: Buffer | null;
  publicUrl: string;
  sftpHost: string;
  /** Customer-SFTP polling: the schedule (null: this instance does not schedule polls) and the settle time. */
  sftpPoll: { cron: string | null; settleSeconds: number };
  /** SFTP_HOST_KEY as given (a path or the key itself); null generates one under DATA_DIR. */
  sftpHostKey: string | null;
  /** Dashboard sessions: idle and absolute expiry. */
  sessions: { idleMinutes: number; maxHours: number };
  sftpLogin: { maxFailures: number; lockoutSeconds: number; failureDelayMs: number };
  emailDomain: string;
  maxJsonBodyBytes: number;
  httpIdleTimeoutSeconds: number;
  shutdownTimeoutSeconds: number;
  workers: number;
  jobConcurrency: number;
  maxUploadBytes: number;
  /** What a compressed input may inflate to (MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSION_RATIO); the engine pool applies it. */
  decompression: { maxBytes: number; maxRatio: number };
  /** Previews and schema inference: the sample's size limit and time limit. */
  preview: { maxBytes: number; timeoutMs: number };
  /** How often a processing run's progress is recorded and pushed (PROGRESS_INTERVAL_MS). */
  progressIntervalMs: number;
  /** Most members of a zip archive (MAX_ARCHIVE_MEMBERS). */
  maxArchiveMembers: number;
  fileLinkTtlSeconds: number;
  keyCacheTtlMs: number;
  /** Postgres: how long a cached read (a pipeline, a page of connections) may live on an instance when no change was signalled; 0: none kept. */
  readCacheTtlMs: number;
  /** Postgres: a query whose connection goes silent this long fails (0: never). */
  databaseStallMs: number;
  documentsSingleUploadMaxBytes: number;
  /** Per-key request and upload-byte budgets, failed logins per address, per fixed window; 0 turns one off. */
  rateLimits: RateLimitSettings;
  auditRetentionDays: number;
  outboundUploadTtlSeconds: number;
  outboundMaxPartBytes: number;
  /** Webhook delivery: timeout, retry schedule, Retry-After cap, private targets. */
  webhooks: WebhookSettings;
  /** Object storage on S3 (or compatible); null keeps objects on local disk. */
  s3: S3Settings | null;
  /** Local disk: written files stay in the page cache once on disk (STORAGE_CACHE_WRITES); false drops them. */
  storageCacheWrites: boolean;
  /** Notification channels; a channel left null is not configured (reported at start, its sends recorded as failed). */
  notify: NotifySettings;
}

export interface RateLimitSettings {
  requests: number;
  uploadBytes: number;
  authFailures: number;
  windowSeconds: number;
  syncMs: number;
}

export interface NotifySettings {
  email: { smtpUrl: string; from: string } | null;
  slack: { token: string; apiUrl: string } | null;
  sms: { accountSid: string; authToken: string; from: string; apiUrl: string | null } | null;
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function parseConfig(env: Record<string, string | undefined>): Config {
  // Empty strings count as unset, the way shells and .env files mean them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const r = Env.safeParse(cleaned);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join("\n  ")}`);
  }
  const e = r.data;
  const dataDir = resolve(e.DATA_DIR);
  const publicUrl = (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, "");
  if (e.DATABASE_URL && !e.ENCRYPTION_KEY) {
    throw new ConfigError(
      "invalid configuration:\n  ENCRYPTION_KEY: is required when DATABASE_URL is set, so that every instance shares it (openssl rand -base64 32)",
    );
  }
  if (Boolean(e.S3_ACCESS_KEY_ID) !== Boolean(e.S3_SECRET_ACCESS_KEY)) {
    throw new ConfigError("invalid configuration:\n  S3_ACCESS_KEY_ID: set it together with S3_SECRET_ACCESS_KEY, or neither");
  }
  if (Boolean(e.NOTIFY_SMTP_URL) !== Boolean(e.NOTIFY_EMAIL_FROM)) {
    throw new ConfigError("invalid configuration:\n  NOTIFY_SMTP_URL: set it together with NOTIFY_EMAIL_FROM, or neither");
  }
  const twilio = [e.NOTIFY_TWILIO_ACCOUNT_SID, e.NOTIFY_TWILIO_AUTH_TOKEN, e.NOTIFY_TWILIO_FROM].filter(Boolean).length;
  if (twilio !== 0 && twilio !== 3) {
    throw new ConfigError(
      "invalid configuration:\n  NOTIFY_TWILIO_ACCOUNT_SID: set it together with NOTIFY_TWILIO_AUTH_TOKEN and NOTIFY_TWILIO_FROM, or none of them",
    );
  }
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir,
    storageCacheWrites: e.STORAGE_CACHE_WRITES === "true" || e.STORAGE_CACHE_WRITES === "1",
    database: e.DATABASE_URL ? { kind: "pg", url: e.DATABASE_URL } : { kind: "sqlite", path: resolve(dataDir, "service.db") },
    sftpPort: e.SFTP_PORT,
    smtpPort: e.SMTP_PORT,
    smtpMaxBytes: e.SMTP_MAX_BYTES,
    logLevel: e.LOG_LEVEL,
    metricsToken: e.METRICS_TOKEN ?? null,
    encryptionKey: e.ENCRYPTION_KEY ? Buffer.from(e.ENCRYPTION_KEY, "base64") : null,
    publicUrl,
    sftpHost: e.SFTP_HOST ?? new URL(publicUrl).hostname,
    sftpPoll: { cron: e.SFTP_POLL_CRON === "off" ? null : e.SFTP_POLL_CRON, settleSeconds: e.SFTP_POLL_SETTLE_SECONDS },
    sftpHostKey: e.SFTP_HOST_KEY ?? null,
    sessions: { idleMinutes: e.SESSION_IDLE_MINUTES, maxHours: e.SESSION_MAX_HOURS },
    sftpLogin: { maxFailures: e.SFTP_MAX_LOGIN_FAILURES, lockoutSeconds: e.SFTP_LOCKOUT_SECONDS, failureDelayMs: e.SFTP_FAILURE_DELAY_MS },
    emailDomain: e.EMAIL_DOMAIN.toLowerCase(),
    maxJsonBodyBytes: e.MAX_JSON_BODY_BYTES,
    httpIdleTimeoutSeconds: e.HTTP_IDLE_TIMEOUT_SECONDS,
    shutdownTimeoutSeconds: e.SHUTDOWN_TIMEOUT_SECONDS,
    workers: e.WORKERS ?? Math.max(1, availableParallelism()),
    jobConcurrency: e.JOB_CONCURRENCY ?? 2 * (e.WORKERS ?? Math.max(1, availableParallelism())),
    maxUploadBytes: e.MAX_UPLOAD_BYTES,
    decompression: { maxBytes: e.MAX_DECOMPRESSED_BYTES, maxRatio: e.MAX_DECOMPRESSION_RATIO },
    preview: { maxBytes: e.PREVIEW_MAX_BYTES, timeoutMs: e.PREVIEW_TIMEOUT_MS },
    progressIntervalMs: e.PROGRESS_INTERVAL_MS,
    maxArchiveMembers: e.MAX_ARCHIVE_MEMBERS,
    fileLinkTtlSeconds: e.FILE_LINK_TTL_SECONDS,
    keyCacheTtlMs: e.KEY_CACHE_TTL_MS,
    readCacheTtlMs: e.READ_CACHE_TTL_MS,
    databaseStallMs: Math.round(e.DATABASE_STALL_TIMEOUT_SECONDS * 1000),
    documentsSingleUploadMaxBytes: e.DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES,
    rateLimits: {
      requests: e.RATE_LIMIT_REQUESTS,
      uploadBytes: e.RATE_LIMIT_UPLOAD_BYTES,
      authFailures: e.RATE_LIMIT_AUTH_FAILURES,
      windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS,
      syncMs: e.RATE_LIMIT_SYNC_MS,
    },
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    outboundUploadTtlSeconds: e.OUTBOUND_UPLOAD_TTL_SECONDS,
    outboundMaxPartBytes: e.OUTBOUND_MAX_PART_BYTES,
    webhooks: {
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE,
      retryAfterMaxMs: e.WEBHOOK_RETRY_AFTER_MAX_SECONDS * 1000,
      allowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS === "true" || e.WEBHOOK_ALLOW_PRIVATE_TARGETS === "1",
    },
    s3: e.S3_BUCKET
      ? {
          bucket: e.S3_BUCKET,
          region: e.S3_REGION,
          endpoint: e.S3_ENDPOINT,
          forcePathStyle: e.S3_FORCE_PATH_STYLE === undefined ? undefined : e.S3_FORCE_PATH_STYLE === "true" || e.S3_FORCE_PATH_STYLE === "1",
          accessKeyId: e.S3_ACCESS_KEY_ID,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY,
        }
      : null,
    notify: {
      email: e.NOTIFY_SMTP_URL && e.NOTIFY_EMAIL_FROM ? { smtpUrl: e.NOTIFY_SMTP_URL, from: e.NOTIFY_EMAIL_FROM } : null,
      slack: e.NOTIFY_SLACK_TOKEN ? { token: e.NOTIFY_SLACK_TOKEN, apiUrl: e.NOTIFY_SLACK_API_URL } : null,
      sms:
        e.NOTIFY_TWILIO_ACCOUNT_SID && e.NOTIFY_TWILIO_AUTH_TOKEN && e.NOTIFY_TWILIO_FROM
          ? { accountSid: e.NOTIFY_TWILIO_ACCOUNT_SID, authToken: e.NOTIFY_TWILIO_AUTH_TOKEN, from: e.NOTIFY_TWILIO_FROM, apiUrl: e.NOTIFY_TWILIO_API_URL ?? null }
          : null,
    },
  };
}
