import type { Database } from "../../db/client";
import type { SecretBox } from "../adapters/crypto/secret-box";
import type { EventBus } from "../adapters/events/port";
import type { Notifiers } from "../adapters/notify/port";
import type { HostResolver, WebhookSender, WebhookSettings } from "../adapters/webhooks/port";
import type { SftpClientPort } from "../adapters/sftp/port";
import type { ObjectStore, StorageConfig } from "../adapters/storage/port";
import type { EnginePool } from "../engine/types";
import type { JobQueue } from "../jobs/port";
import type { Clock } from "../domain/clock";
import type { ApiVersion } from "../domain/versions";
import type { Logger } from "../logger";

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
  /** Outgoing webhook calls: the sender, the resolver whose answers are checked and pinned, the WEBHOOK_* settings. */
  webhooks: { sender: WebhookSender; resolve: HostResolver; settings: WebhookSettings };
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
    /** Lifetime of an outbound upload session that is not completed. */
    outboundUploadTtlSeconds: number;
    /** Largest body of one outbound upload part over REST. */
    outboundMaxPartBytes: number;
    /** Dashboard sessions (SESSION_IDLE_MINUTES, SESSION_MAX_HOURS). */
    sessions: { idleMinutes: number; maxHours: number };
  };
}

export type Role = "admin" | "member";

/** The authenticated caller: one API key of one workspace, or a person's session working in one of their workspaces. */
export interface Actor {
  workspaceId: string;
  /** The API key; null for a person's session. */
  keyId: string | null;
  /** The person behind a session; absent for an API key. */
  userId?: string;
  role: Role;
  features: readonly string[];
  defaultVersion: ApiVersion | null;
}

/** Options every use case called on behalf of a caller takes. */
export interface CallOptions {
  actor: Actor;
  /** The API version applied to this call; rules that changed between versions read it. */
  version?: ApiVersion;
}
