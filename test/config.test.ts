import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { ConfigError, parseConfig } from "../src/config";

const KEY = Buffer.alloc(32, 7).toString("base64");

describe("configuration", () => {
  test("no configuration gives the embedded default: SQLite under ./data, documented ports", () => {
    const c = parseConfig({});
    expect(c.port).toBe(3000);
    expect(c.sftpPort).toBe(2222);
    expect(c.sftpPoll).toEqual({ cron: "* * * * *", settleSeconds: 30 });
    expect(c.smtpPort).toBe(2525);
    expect(c.smtpMaxBytes).toBe(25 * 1024 ** 2);
    expect(c.logLevel).toBe("info");
    expect(c.dataDir).toBe(resolve("./data"));
    expect(c.database).toEqual({ kind: "sqlite", path: resolve("./data/service.db") });
    expect(c.publicUrl).toBe("http://localhost:3000");
    expect(c.encryptionKey).toBeNull();
    expect(c.documentsSingleUploadMaxBytes).toBe(64 * 1024 ** 2);
  });

  test("values are read from the environment; empty strings count as unset", () => {
    const c = parseConfig({
      PORT: "8080",
      DATA_DIR: "/var/lib/fps",
      SFTP_PORT: "0",
      SMTP_PORT: "",
      LOG_LEVEL: "warn",
      DATABASE_URL: "postgres://u@db:5432/fps",
      ENCRYPTION_KEY: KEY,
      PUBLIC_URL: "https://files.example.com/",
    });
    expect(c.port).toBe(8080);
    expect(c.dataDir).toBe("/var/lib/fps");
    expect(c.sftpPort).toBe(0);
    expect(c.smtpPort).toBe(2525);
    expect(c.logLevel).toBe("warn");
    expect(c.database).toEqual({ kind: "pg", url: "postgres://u@db:5432/fps" });
    expect(c.encryptionKey?.length).toBe(32);
    expect(c.publicUrl).toBe("https://files.example.com");
    expect(c.sftpHost).toBe("files.example.com");
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    ["PORT", { PORT: "http" }, /PORT: /],
    ["PORT", { PORT: "70000" }, /PORT: must be between 0 and 65535/],
    ["SFTP_PORT", { SFTP_PORT: "-1" }, /SFTP_PORT: /],
    ["SMTP_PORT", { SMTP_PORT: "2.5" }, /SMTP_PORT: must be a whole number/],
    ["SMTP_MAX_BYTES", { SMTP_MAX_BYTES: "0" }, /SMTP_MAX_BYTES: must be a positive number of bytes/],
    ["SFTP_POLL_CRON", { SFTP_POLL_CRON: "every minute" }, /SFTP_POLL_CRON: must be five cron fields/],
    ["SFTP_POLL_CRON", { SFTP_POLL_CRON: "99 * * * *" }, /SFTP_POLL_CRON: must be five cron fields/],
    ["SFTP_POLL_SETTLE_SECONDS", { SFTP_POLL_SETTLE_SECONDS: "-1" }, /SFTP_POLL_SETTLE_SECONDS: must be 0 or more/],
    ["LOG_LEVEL", { LOG_LEVEL: "loud" }, /LOG_LEVEL: /],
    ["DATABASE_URL", { DATABASE_URL: "mysql://x" }, /DATABASE_URL: must be a postgres:\/\/ URL/],
    ["ENCRYPTION_KEY", { ENCRYPTION_KEY: "short" }, /ENCRYPTION_KEY: must be 32 bytes/],
    ["PUBLIC_URL", { PUBLIC_URL: "not a url" }, /PUBLIC_URL: /],
    ["WEBHOOK_RETRY_SCHEDULE", { WEBHOOK_RETRY_SCHEDULE: "5s,soon" }, /WEBHOOK_RETRY_SCHEDULE: 'soon' is not a duration/],
    ["WEBHOOK_RETRY_SCHEDULE", { WEBHOOK_RETRY_SCHEDULE: "8d" }, /WEBHOOK_RETRY_SCHEDULE: '8d' is not a duration of at most 7d/],
    ["WEBHOOK_TIMEOUT_MS", { WEBHOOK_TIMEOUT_MS: "0" }, /WEBHOOK_TIMEOUT_MS: must be at least 10/],
    ["WEBHOOK_ALLOW_PRIVATE_TARGETS", { WEBHOOK_ALLOW_PRIVATE_TARGETS: "yes" }, /WEBHOOK_ALLOW_PRIVATE_TARGETS: must be true or false/],
    ["OUTBOUND_UPLOAD_TTL_SECONDS", { OUTBOUND_UPLOAD_TTL_SECONDS: "59" }, /OUTBOUND_UPLOAD_TTL_SECONDS: must be at least 60/],
    ["OUTBOUND_UPLOAD_TTL_SECONDS", { OUTBOUND_UPLOAD_TTL_SECONDS: "2592001" }, /OUTBOUND_UPLOAD_TTL_SECONDS: must be at most 2592000/],
    ["OUTBOUND_MAX_PART_BYTES", { OUTBOUND_MAX_PART_BYTES: "0" }, /OUTBOUND_MAX_PART_BYTES: must be a positive number of bytes/],
    ["OUTBOUND_MAX_PART_BYTES", { OUTBOUND_MAX_PART_BYTES: "134217729" }, /OUTBOUND_MAX_PART_BYTES: must be at most 134217728/],
    ["DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES", { DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: "6000000000" }, /DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: must be at most 5368709120/],
    ["DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES", { DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: "0" }, /DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES: must be at least 1/],
    ["HTTP_IDLE_TIMEOUT_SECONDS", { HTTP_IDLE_TIMEOUT_SECONDS: "256" }, /HTTP_IDLE_TIMEOUT_SECONDS: must be at most 255/],
    ["HTTP_IDLE_TIMEOUT_SECONDS", { HTTP_IDLE_TIMEOUT_SECONDS: "0" }, /HTTP_IDLE_TIMEOUT_SECONDS: must be at least 1/],
    ["SHUTDOWN_TIMEOUT_SECONDS", { SHUTDOWN_TIMEOUT_SECONDS: "0" }, /SHUTDOWN_TIMEOUT_SECONDS: must be at least 1/],
    ["SHUTDOWN_TIMEOUT_SECONDS", { SHUTDOWN_TIMEOUT_SECONDS: "soon" }, /SHUTDOWN_TIMEOUT_SECONDS/],
    ["MAX_DECOMPRESSED_BYTES", { MAX_DECOMPRESSED_BYTES: "0" }, /MAX_DECOMPRESSED_BYTES: must be a positive number of bytes/],
    ["MAX_DECOMPRESSED_BYTES", { MAX_DECOMPRESSED_BYTES: "lots" }, /MAX_DECOMPRESSED_BYTES: /],
    ["MAX_DECOMPRESSION_RATIO", { MAX_DECOMPRESSION_RATIO: "1" }, /MAX_DECOMPRESSION_RATIO: must be at least 2/],
    ["MAX_DECOMPRESSION_RATIO", { MAX_DECOMPRESSION_RATIO: "2.5" }, /MAX_DECOMPRESSION_RATIO: must be a whole number/],
  ];
  test("decompression limits: 5 GiB and 100-fold unless configured", () => {
    expect(parseConfig({}).decompression).toEqual({ maxBytes: 5 * 1024 ** 3, maxRatio: 100 });
    expect(parseConfig({ MAX_DECOMPRESSED_BYTES: "1048576", MAX_DECOMPRESSION_RATIO: "20" }).decompression).toEqual({ maxBytes: 1_048_576, maxRatio: 20 });
  });
  test("SFTP_POLL_CRON takes a schedule, or off for an instance that must not poll customers' servers", () => {
    expect(parseConfig({ SFTP_POLL_CRON: "*/5 * * * *", SFTP_POLL_SETTLE_SECONDS: "0" }).sftpPoll).toEqual({ cron: "*/5 * * * *", settleSeconds: 0 });
    expect(parseConfig({ SFTP_POLL_CRON: "off" }).sftpPoll.cron).toBeNull();
  });

  for (const [name, env, message] of bad) {
    test(`a bad ${name} stops start-up with a message naming it`, () => {
      expect(() => parseConfig(env)).toThrow(ConfigError);
      expect(() => parseConfig(env)).toThrow(message);
    });
  }

  test("outbound uploads: sessions expire after 24 h and parts are at most 16 MiB unless configured", () => {
    expect(parseConfig({})).toMatchObject({ outboundUploadTtlSeconds: 86_400, outboundMaxPartBytes: 16 * 1024 * 1024 });
    expect(parseConfig({ OUTBOUND_UPLOAD_TTL_SECONDS: "600", OUTBOUND_MAX_PART_BYTES: "1048576" })).toMatchObject({
      outboundUploadTtlSeconds: 600,
      outboundMaxPartBytes: 1_048_576,
    });
  });

  test("HTTP idle timeout: 120 s unless configured", () => {
    expect(parseConfig({}).httpIdleTimeoutSeconds).toBe(120);
    expect(parseConfig({ HTTP_IDLE_TIMEOUT_SECONDS: "30" }).httpIdleTimeoutSeconds).toBe(30);
  });

  test("shutdown: 25 s to drain unless configured", () => {
    expect(parseConfig({}).shutdownTimeoutSeconds).toBe(25);
    expect(parseConfig({ SHUTDOWN_TIMEOUT_SECONDS: "5" }).shutdownTimeoutSeconds).toBe(5);
  });

  test("rate limits and audit retention: generous defaults, 0 turns a budget off, bad values name the variable", () => {
    expect(parseConfig({}).rateLimits).toEqual({ requests: 60_000, uploadBytes: 20 * 1024 ** 3, authFailures: 100, windowSeconds: 60, syncMs: 100 });
    expect(parseConfig({}).auditRetentionDays).toBe(365);
    expect(parseConfig({ RATE_LIMIT_REQUESTS: "0", RATE_LIMIT_WINDOW_SECONDS: "3600" }).rateLimits).toMatchObject({ requests: 0, windowSeconds: 3600 });
    expect(() => parseConfig({ RATE_LIMIT_REQUESTS: "-1" })).toThrow("RATE_LIMIT_REQUESTS: must be at least 0");
    expect(() => parseConfig({ RATE_LIMIT_UPLOAD_BYTES: "lots" })).toThrow("RATE_LIMIT_UPLOAD_BYTES:");
    expect(() => parseConfig({ RATE_LIMIT_WINDOW_SECONDS: "0" })).toThrow("RATE_LIMIT_WINDOW_SECONDS: must be at least 1");
    expect(() => parseConfig({ RATE_LIMIT_SYNC_MS: "5" })).toThrow("RATE_LIMIT_SYNC_MS: must be at least 10");
    expect(() => parseConfig({ AUDIT_RETENTION_DAYS: "0" })).toThrow("AUDIT_RETENTION_DAYS: must be at least 1");
  });

  test("key cache: lookups reused for 1 s unless configured; 0 turns it off; more than 60 s refused", () => {
    expect(parseConfig({}).keyCacheTtlMs).toBe(1000);
    expect(parseConfig({ KEY_CACHE_TTL_MS: "0" }).keyCacheTtlMs).toBe(0);
    expect(() => parseConfig({ KEY_CACHE_TTL_MS: "60001" })).toThrow("KEY_CACHE_TTL_MS: must be at most 60000");
  });

  test("preview samples: 4 MiB and 10 s unless configured; bad values named", () => {
    expect(parseConfig({}).preview).toEqual({ maxBytes: 4 * 1024 ** 2, timeoutMs: 10_000 });
    expect(parseConfig({ PREVIEW_MAX_BYTES: "1048576", PREVIEW_TIMEOUT_MS: "500" }).preview).toEqual({ maxBytes: 1048576, timeoutMs: 500 });
    expect(() => parseConfig({ PREVIEW_MAX_BYTES: "10" })).toThrow("PREVIEW_MAX_BYTES: must be at least 1024");
    expect(() => parseConfig({ PREVIEW_MAX_BYTES: "lots" })).toThrow("PREVIEW_MAX_BYTES:");
    expect(() => parseConfig({ PREVIEW_TIMEOUT_MS: "1.5" })).toThrow("PREVIEW_TIMEOUT_MS: must be a whole number");
    expect(() => parseConfig({ PREVIEW_TIMEOUT_MS: "300001" })).toThrow("PREVIEW_TIMEOUT_MS: must be at most 300000");
  });

  test("read cache (Postgres): reads kept at most 1 s unless configured; 0 turns it off; more than 60 s or a fraction refused", () => {
    expect(parseConfig({}).readCacheTtlMs).toBe(1000);
    expect(parseConfig({ READ_CACHE_TTL_MS: "0" }).readCacheTtlMs).toBe(0);
    expect(() => parseConfig({ READ_CACHE_TTL_MS: "60001" })).toThrow("READ_CACHE_TTL_MS: must be at most 60000");
    expect(() => parseConfig({ READ_CACHE_TTL_MS: "1.5" })).toThrow("READ_CACHE_TTL_MS: must be a whole number");
  });

  test("local storage: written files leave the page cache unless STORAGE_CACHE_WRITES is true; other values refused", () => {
    expect(parseConfig({}).storageCacheWrites).toBe(false);
    expect(parseConfig({ STORAGE_CACHE_WRITES: "true" }).storageCacheWrites).toBe(true);
    expect(parseConfig({ STORAGE_CACHE_WRITES: "1" }).storageCacheWrites).toBe(true);
    expect(parseConfig({ STORAGE_CACHE_WRITES: "0" }).storageCacheWrites).toBe(false);
    expect(() => parseConfig({ STORAGE_CACHE_WRITES: "keep" })).toThrow("STORAGE_CACHE_WRITES: must be true or false");
  });

  test("webhook settings: schedule with units (or none), timeout, Retry-After cap, private targets", () => {
    const c = parseConfig({
      WEBHOOK_RETRY_SCHEDULE: "250ms, 2s,1m,1h,1d",
      WEBHOOK_TIMEOUT_MS: "2500",
      WEBHOOK_RETRY_AFTER_MAX_SECONDS: "60",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
    });
    expect(c.webhooks).toEqual({ retryScheduleMs: [250, 2000, 60_000, 3_600_000, 86_400_000], timeoutMs: 2500, retryAfterMaxMs: 60_000, allowPrivateTargets: true });
    expect(parseConfig({ WEBHOOK_RETRY_SCHEDULE: "none" }).webhooks.retryScheduleMs).toEqual([]);
    expect(parseConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "false" }).webhooks.allowPrivateTargets).toBe(false);
  });

  test("Postgres needs a shared ENCRYPTION_KEY, so that every instance can read stored credentials", () => {
    expect(() => parseConfig({ DATABASE_URL: "postgres://u@db/fps" })).toThrow(/ENCRYPTION_KEY: is required when DATABASE_URL is set/);
  });

  test("hosted SFTP: host key and login policy, with documented defaults; bad values named", () => {
    const d = parseConfig({});
    expect(d.sftpHostKey).toBeNull();
    expect(d.sftpLogin).toEqual({ maxFailures: 10, lockoutSeconds: 900, failureDelayMs: 500 });
    const c = parseConfig({ SFTP_HOST_KEY: "/etc/fps/host_key", SFTP_MAX_LOGIN_FAILURES: "3", SFTP_LOCKOUT_SECONDS: "60", SFTP_FAILURE_DELAY_MS: "0" });
    expect(c.sftpHostKey).toBe("/etc/fps/host_key");
    expect(c.sftpLogin).toEqual({ maxFailures: 3, lockoutSeconds: 60, failureDelayMs: 0 });
    expect(() => parseConfig({ SFTP_MAX_LOGIN_FAILURES: "0" })).toThrow(/SFTP_MAX_LOGIN_FAILURES: must be at least 1/);
    expect(() => parseConfig({ SFTP_LOCKOUT_SECONDS: "1.5" })).toThrow(/SFTP_LOCKOUT_SECONDS: must be a whole number/);
    expect(() => parseConfig({ SFTP_FAILURE_DELAY_MS: "20000" })).toThrow(/SFTP_FAILURE_DELAY_MS: must be at most 10000/);
  });

  test("notification channels: each configured or not; SMTP URL with a From, Twilio's three together; bad values named", () => {
    expect(parseConfig({}).notify).toEqual({ email: null, slack: null, sms: null });
    const c = parseConfig({
      NOTIFY_SMTP_URL: "smtps://alerts:p%40ss@mail.example.com:465",
      NOTIFY_EMAIL_FROM: "File Pipeline <alerts@example.com>",
      NOTIFY_SLACK_TOKEN: "xoxb-1",
      NOTIFY_TWILIO_ACCOUNT_SID: "AC00000000000000000000000000000001",
      NOTIFY_TWILIO_AUTH_TOKEN: "t",
      NOTIFY_TWILIO_FROM: "+15550000000",
    });
    expect(c.notify).toEqual({
      email: { smtpUrl: "smtps://alerts:p%40ss@mail.example.com:465", from: "File Pipeline <alerts@example.com>" },
      slack: { token: "xoxb-1", apiUrl: "https://slack.com/api/" },
      sms: { accountSid: "AC00000000000000000000000000000001", authToken: "t", from: "+15550000000", apiUrl: null },
    });
    expect(() => parseConfig({ NOTIFY_SMTP_URL: "smtp://mail:25" })).toThrow(/NOTIFY_SMTP_URL: set it together with NOTIFY_EMAIL_FROM/);
    expect(() => parseConfig({ NOTIFY_SMTP_URL: "http://mail", NOTIFY_EMAIL_FROM: "a@b.c" })).toThrow(/NOTIFY_SMTP_URL: must be an smtp:\/\/ or smtps:\/\/ URL/);
    expect(() => parseConfig({ NOTIFY_TWILIO_ACCOUNT_SID: "AC00000000000000000000000000000001" })).toThrow(/NOTIFY_TWILIO_ACCOUNT_SID: set it together with/);
    expect(() => parseConfig({ NOTIFY_TWILIO_ACCOUNT_SID: "SK1", NOTIFY_TWILIO_AUTH_TOKEN: "t", NOTIFY_TWILIO_FROM: "+15550000000" })).toThrow(
      /NOTIFY_TWILIO_ACCOUNT_SID: must be a Twilio account SID/,
    );
    expect(() => parseConfig({ NOTIFY_TWILIO_ACCOUNT_SID: "AC00000000000000000000000000000001", NOTIFY_TWILIO_AUTH_TOKEN: "t", NOTIFY_TWILIO_FROM: "5550000" })).toThrow(/NOTIFY_TWILIO_FROM: must be an E.164 number/);
    expect(parseConfig({ NOTIFY_TWILIO_ACCOUNT_SID: "AC00000000000000000000000000000001", NOTIFY_TWILIO_AUTH_TOKEN: "t", NOTIFY_TWILIO_FROM: "MGaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }).notify.sms?.from).toBe("MGaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    expect(() => parseConfig({ NOTIFY_SLACK_API_URL: "slack" })).toThrow(/NOTIFY_SLACK_API_URL: /);
  });
});
