import { formatIssues } from "../domain/validation";
import type { ServiceContext } from "../services/context";
import { deliverSend, giveUpSend, NOTIFY_SEND_JOB, reportNotifyChannels, SendPayload } from "../services/notifications";
import { expireOutboundUploads, OUTBOUND_EXPIRE_CRON, OUTBOUND_EXPIRE_JOB } from "../services/outbound";
import { STORAGE_SWEEP_CRON, STORAGE_SWEEP_JOB, sweepLocalStorage } from "../services/documents/sweep";
import { DeliveryPayload, deliverWebhook, WEBHOOK_DELIVERY_JOB } from "../services/webhooks";
import {
  dispatchRunEvent,
  giveUpHostedArrival,
  giveUpRun,
  HOSTED_ARRIVAL_JOB,
  HostedArrivalPayload,
  handleHostedArrival,
  pollConnection,
  ProcessRunPayload,
  processRun,
  RUN_EVENT_JOB,
  RUN_JOB,
  RUN_JOB_ATTEMPTS,
  RunEventPayload,
  SFTP_POLL_ALL_JOB,
  SFTP_POLL_JOB,
  SftpPollPayload,
  schedulePolls,
  sweepOrphanRuns,
} from "../services/run-path";
import { AUDIT_PURGE_CRON, AUDIT_PURGE_JOB, purgeAuditEvents } from "../services/audit";
import { IDEMPOTENCY_PURGE_CRON, IDEMPOTENCY_PURGE_JOB, purgeIdempotencyKeys } from "../services/idempotency";
import type { CronSpec, JobDefinition } from "./port";

/** A job's `parse`: its payload checked against its shape (old jobs outlive code); a bad one is an error naming the job. */
function payloadOf<T>(job: string, shape: { safeParse(p: unknown): { success: true; data: T } | { success: false; error: { issues: Parameters<typeof formatIssues>[0] } } }) {
  return (payload: unknown): T => {
    const r = shape.safeParse(payload);
    if (!r.success) throw new Error(`${job}: bad payload: ${formatIssues(r.error.issues)}`);
    return r.data;
  };
}

/** Processes one run: parse, map, validate, write (src/services/run-path/process/process-run.ts). */
export function processRunJob(svc: ServiceContext): JobDefinition<ProcessRunPayload> {
  return {
    name: RUN_JOB,
    parse: payloadOf(RUN_JOB, ProcessRunPayload),
    async handle(payload, job) {
      await processRun(svc, { runId: payload.runId, attempt: payload.attempt, signal: job.signal });
    },
    async onGiveUp(payload, error) {
      await giveUpRun(svc, { runId: payload.runId, attempt: payload.attempt, attempts: RUN_JOB_ATTEMPTS, error });
    },
  };
}

/** Hands a run event to its consumers, listed in src/services/run-path/announce/index.ts (webhooks, notifications). */
export function runEventJob(svc: ServiceContext): JobDefinition<RunEventPayload> {
  return {
    name: RUN_EVENT_JOB,
    parse: payloadOf(RUN_EVENT_JOB, RunEventPayload),
    async handle(payload) {
      await dispatchRunEvent(svc, payload);
    },
  };
}

/** One automatic attempt of one webhook delivery (src/services/webhooks/deliver.ts). */
export function webhookDeliveryJob(svc: ServiceContext): JobDefinition<DeliveryPayload> {
  return {
    name: WEBHOOK_DELIVERY_JOB,
    parse: payloadOf(WEBHOOK_DELIVERY_JOB, DeliveryPayload),
    async handle(payload, job) {
      await deliverWebhook(svc, payload, job.signal);
    },
  };
}

/** Starts the runs of a file that arrived in a connection's inbound folder over hosted SFTP or the documents API (src/services/run-path/doors/space-arrival.ts). */
export function hostedArrivalJob(svc: ServiceContext): JobDefinition<HostedArrivalPayload> {
  return {
    name: HOSTED_ARRIVAL_JOB,
    parse: payloadOf(HOSTED_ARRIVAL_JOB, HostedArrivalPayload),
    async handle(payload) {
      await handleHostedArrival(svc, payload);
    },
    async onGiveUp(payload, error) {
      await giveUpHostedArrival(svc, payload, error);
    },
  };
}

/**
 * Sends one notification (src/services/notifications/send.ts). Creating this
 * definition (once, when the service starts its jobs) reports each channel
 * that is not configured.
 */
export function notifySendJob(svc: ServiceContext): JobDefinition<SendPayload> {
  reportNotifyChannels(svc);
  return {
    name: NOTIFY_SEND_JOB,
    parse: payloadOf(NOTIFY_SEND_JOB, SendPayload),
    async handle(payload, job) {
      await deliverSend(svc, payload, job);
    },
    async onGiveUp(payload, error) {
      await giveUpSend(svc, payload, error);
    },
  };
}

/** Expires outbound upload sessions that were never completed and deletes their parts (src/services/outbound/expire-uploads.ts). */
export function expireOutboundUploadsJob(svc: ServiceContext): JobDefinition<null> {
  return {
    name: OUTBOUND_EXPIRE_JOB,
    parse: () => null,
    async handle() {
      await expireOutboundUploads(svc);
    },
  };
}

/**
 * Removes what crashes and abandoned clients leave in storage: the local
 * store's temp files and multipart uploads (src/services/documents/sweep.ts)
 * and, on both stores, the files of runs never recorded
 * (src/services/run-path/ingest/sweep-orphans.ts). Hourly, and once at start-up.
 */
export function storageSweepJob(svc: ServiceContext): JobDefinition<null> {
  return {
    name: STORAGE_SWEEP_JOB,
    parse: () => null,
    async handle() {
      await sweepLocalStorage(svc);
      await sweepOrphanRuns(svc);
    },
  };
}

/** Enqueues one poll per self-hosted SFTP connection with an active inbound pipeline (src/services/run-path/doors/sftp-poll.ts). */
export function sftpPollAllJob(svc: ServiceContext): JobDefinition<null> {
  return {
    name: SFTP_POLL_ALL_JOB,
    parse: () => null,
    async handle() {
      await schedulePolls(svc);
    },
  };
}

/** Polls one customer SFTP server's inbound folder; failures to reach it are logged, the next schedule tries again. */
export function sftpPollJob(svc: ServiceContext): JobDefinition<SftpPollPayload> {
  return {
    name: SFTP_POLL_JOB,
    parse: payloadOf(SFTP_POLL_JOB, SftpPollPayload),
    async handle(payload, job) {
      await pollConnection(svc, { ...payload, signal: job.signal });
    },
  };
}

/** Deletes audit records past AUDIT_RETENTION_DAYS (src/services/audit/purge.ts). */
export function auditPurgeJob(svc: ServiceContext): JobDefinition<null> {
  return {
    name: AUDIT_PURGE_JOB,
    parse: () => null,
    async handle() {
      await purgeAuditEvents(svc);
    },
  };
}

/** Deletes Idempotency-Key records past their 24 hours (src/services/idempotency). */
export function idempotencyPurgeJob(svc: ServiceContext): JobDefinition<null> {
  return {
    name: IDEMPOTENCY_PURGE_JOB,
    parse: () => null,
    async handle() {
      await purgeIdempotencyKeys(svc);
    },
  };
}

/** The customer-SFTP schedule (SFTP_POLL_CRON; none when "off"). */
function sftpPollCrons(svc: ServiceContext): CronSpec[] {
  const cron = svc.settings.sftpPoll.cron;
  return cron ? [{ name: SFTP_POLL_ALL_JOB, cron, job: SFTP_POLL_ALL_JOB }] : [];
}

/** Every job the service runs, with the services it calls. */
export function jobDefinitions(svc: ServiceContext): { definitions: JobDefinition<any>[]; crons: CronSpec[] } {
  const sweep: CronSpec[] = [{ name: STORAGE_SWEEP_JOB, cron: STORAGE_SWEEP_CRON, job: STORAGE_SWEEP_JOB }];
  return {
    definitions: [
      processRunJob(svc),
      runEventJob(svc),
      notifySendJob(svc),
      webhookDeliveryJob(svc),
      hostedArrivalJob(svc),
      expireOutboundUploadsJob(svc),
      storageSweepJob(svc),
      sftpPollAllJob(svc),
      sftpPollJob(svc),
      auditPurgeJob(svc),
      idempotencyPurgeJob(svc),
    ],
    crons: [
      { name: OUTBOUND_EXPIRE_JOB, cron: OUTBOUND_EXPIRE_CRON, job: OUTBOUND_EXPIRE_JOB },
      ...sweep,
      ...sftpPollCrons(svc),
      { name: AUDIT_PURGE_JOB, cron: AUDIT_PURGE_CRON, job: AUDIT_PURGE_JOB },
      { name: IDEMPOTENCY_PURGE_JOB, cron: IDEMPOTENCY_PURGE_CRON, job: IDEMPOTENCY_PURGE_JOB },
    ],
  };
}
