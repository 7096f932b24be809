/**
 * What the service counts, for Prometheus (`GET /metrics`). Services and
 * transports call these; only src/adapters/metrics/prometheus.ts knows the
 * library. Every label value comes from a closed list or a route template:
 * never an id, a file name or a path.
 */
export type Surface = "rest" | "graphql" | "trpc";
export type Door = "upload" | "hosted_sftp" | "customer_sftp" | "email" | "outbound" | "documents";
export type LoginMethod = "password" | "publickey" | "other";

/** Route label of a request no route matched: paths are never labels. */
export const UNMATCHED_ROUTE = "unmatched";

export interface QueueDepth {
  /** The job's name (`run.process`, `webhook.deliver`, ...): a closed list in src/jobs/definitions.ts. */
  kind: string;
  waiting: number;
  /** Seconds since the oldest waiting job became due; 0 when none waits. */
  oldestAgeSeconds: number;
}

export interface Metrics {
  httpRequest(surface: Surface, route: string, method: string, status: number, seconds: number): void;
  runStarted(direction: string): void;
  runFinished(status: string, direction: string, seconds: number): void;
  rowsProcessed(counts: { valid: number; skipped: number; quarantined: number }): void;
  bytesReceived(door: Door, bytes: number): void;
  webhookAttempt(outcome: "success" | "failure" | "refused"): void;
  /** channel: EMAIL, SLACK, SMS. */
  notificationSend(channel: string, outcome: "sent" | "failed" | "transient_error" | "not_configured"): void;
  sftpLogin(method: LoginMethod, outcome: "success" | "failure"): void;
  sftpSessionOpened(): void;
  sftpSessionClosed(): void;
  smtpMessage(outcome: "accepted" | "rejected" | "too_large" | "failed"): void;
  /** Read on every scrape (job queue depth by kind). */
  setQueueDepth(read: () => Promise<QueueDepth[]>): void;
  /** The text exposition format and its content type. */
  render(): Promise<{ contentType: string; body: string }>;
}
