import type { Database } from "../../db/client";
import type { SecretBox } from "../adapters/crypto/secret-box";
import type { EventBus } from "../adapters/events/port";
import type { Metrics } from "../adapters/metrics/port";
import type { Notifiers } from "../adapters/notify/port";
import type { HostResolver, WebhookSender, WebhookSettings } from "../adapters/webhooks/port";
import type { SftpClientPort } from "../adapters/sftp/port";
import type { ObjectStore, StorageConfig } from "../adapters/storage/port";
import type { EnginePool } from "../engine/types";
import type { JobQueue } from "../jobs/port";
import type { Clock } from "../domain/clock";
import type { ApiVersion } from "../domain/versions";
import type { Logger } from "../logger";
import type { RateLimits } from "./rate-limits";

/** What every use case receives: the adapters, wired once in src/main.ts. */
export interface ServiceContext {
  db: Database;
  clock: Clock;
  secrets: SecretBox;
  log: Logger;
  sftp: SftpClientPort;
  /** Originals, processed files, rejects; local disk or S3. */
  storage: ObjectStore;
  /** The same store's settings, handed to worker threads so they open it themselves. */
  storageConfig: StorageConfig;
  /** Durable jobs; enqueue inside the transaction that causes the job. */
  queue: JobQueue;
  /** Run-status events for live subscriptions (in process, and across instances on Postgres). */
  events: EventBus;
  /** Parse/map/validate on worker threads. */
  engine: EnginePool;
  /** Notification channels (EMAIL, SLACK, SMS); null where not configured. */
  notify: Notifiers;
  /** Counters and histograms for `GET /metrics` (src/adapters/metrics). */
  metrics: Metrics;
  /** Outgoing webhook calls: the sender, the resolver whose answers are checked and pinned, the WEBHOOK_* settings. */
  webhooks: { sender: WebhookSender; resolve: HostResolver; settings: WebhookSettings };
  /** Request, upload-byte and failed-login budgets (in process, or shared through Postgres). */
  rateLimits: RateLimits;
  settings: {
    publicUrl: string;
    sftpHost: string;
    sftpPort: number;
    /** The service's SMTP receiver as test-connection checks it (the public host name, SMTP_PORT). */
    smtpHost: string;
    smtpPort: number;
    /** Customer-SFTP polling (SFTP_POLL_CRON, SFTP_POLL_SETTLE_SECONDS); cron null: this instance schedules no polls. */
    sftpPoll: { cron: string | null; settleSeconds: number };
    emailDomain: string;
    fileLinkTtlSeconds: number;
    /** Documents: largest upload answered with a `single` ticket (DOCUMENTS_SINGLE_UPLOAD_MAX_BYTES). */
    documentsSingleUploadMaxBytes: number;
    maxUploadBytes: number;
    /** Previews and schema inference: the sample's size limit (PREVIEW_MAX_BYTES) and time limit (PREVIEW_TIMEOUT_MS). */
    preview: { maxBytes: number; timeoutMs: number };
    /** How often a processing run's progress is recorded and pushed (PROGRESS_INTERVAL_MS). */
    progressIntervalMs: number;
    /** Lifetime of an outbound upload session that is not completed. */
    outboundUploadTtlSeconds: number;
    /** Largest body of one outbound upload part over REST. */
    outboundMaxPartBytes: number;
    /** Audit records older than this are deleted by the retention job. */
    auditRetentionDays: number;
    /** Zip archives: most members (MAX_ARCHIVE_MEMBERS), total inflated bytes and ratio (MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSION_RATIO). */
    archive: { maxMembers: number; maxBytes: number; maxRatio: number };
    /** Dashboard sessions (SESSION_IDLE_MINUTES, SESSION_MAX_HOURS). */
    sessions: { idleMinutes: number; maxHours: number };
  };
}

export type Role = "admin" | "member";

/** The surface a change came through, as the audit log records it. */
export type Surface = "rest" | "graphql" | "trpc" | "cli";

/** Where a call came from: set by the transport that admitted it, recorded in audit events. */
export interface Origin {
  surface: Surface;
  /** The client's address as the server saw it; null when unknown (in-process calls). */
  address: string | null;
  requestId: string | null;
}

/** The authenticated caller: one API key of one workspace, or a person's session working in one of their workspaces. */
export interface Actor {
  workspaceId: string;
  /** The API key; null for a person's session. */
  keyId: string | null;
  /** The key's name, or the person's e-mail for a session (the audit log's "who"). */
  keyName: string;
  /** The person behind a session; absent for an API key. */
  userId?: string;
  role: Role;
  features: readonly string[];
  defaultVersion: ApiVersion | null;
  /** Set by the transport; absent on in-process calls (tests, tRPC createCaller), which are recorded as `trpc`/unknown. */
  origin?: Origin;
}

/** Options every use case called on behalf of a caller takes. */
export interface CallOptions {
  actor: Actor;
  /** The API version applied to this call; rules that changed between versions read it. */
  version?: ApiVersion;
}
