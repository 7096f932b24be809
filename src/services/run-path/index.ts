/**
 * The run path: how a file becomes a run, is processed, and is announced.
 * Three stages, each its own folder; docs/architecture.md draws it.
 *
 *   doors ──► ingest ──► [run.process job] ──► process ──► announce
 *
 * Doors (where files come from). Each calls ingest() and nothing else:
 * - REST upload: src/http/routes/runs.ts (door `upload`);
 * - hosted SFTP and the documents API: a file closed in, or moved into, a
 *   connection's inbound folder enqueues the `sftp.arrival` job
 *   (space-files/files.ts, documents/arrival.ts), whose handler is
 *   doors/space-arrival.ts (doors `sftp`, `documents`);
 * - the customer's own SFTP server: the `sftp.poll` job, doors/sftp-poll.ts
 *   (door `sftp_poll`);
 * - e-mail: src/smtp/server.ts hands the message to doors/email/receive.ts
 *   (door `email`);
 * - an outbound upload completed: outbound/complete-upload.ts (`outbound`);
 * - a person's retry or reprocess of a run: runs/retry-run.ts (`retry`),
 *   runs/reprocess-run.ts (`reprocess`).
 *
 * Ingest (ingest/index.ts): stores the file and records a `pending` run with
 * its `run.process` job in one transaction (start-run.ts, queue-run.ts); a
 * connection's file starts one run per active inbound pipeline and leaves an
 * arrival record (inbound.ts); a zip becomes one run per member
 * (archive.ts); a retry makes a failed run pending again (retry.ts).
 *
 * Process (process/index.ts, the `run.process` job): claim the run
 * (pending → processing), run the engine on it (engine-request.ts) while
 * recording progress (progress.ts), deliver an outbound run's file
 * (delivery/), finish (completed, delivered or failed). A job that fails on
 * every attempt fails the run (give-up-run.ts).
 *
 * Announce (announce/index.ts): every status change goes on the live bus
 * for subscriptions (live.ts, watch-runs.ts); an ended run's event is
 * enqueued in the transaction that ends it and the `run.event` job hands it
 * to the consumers listed there: webhooks, then notifications.
 */
export { dispatchRunEvent, enqueueRunEvent, publishStatus, RUN_EVENT_CONSUMERS, RUN_EVENT_JOB, RunEventPayload, RunUpdate, WatchRunsQuery, watchRuns } from "./announce";
export { EMAIL_FOLDER, type EmailReceipt, isInboxAddress, type ReceiveEmailOptions, receiveEmail } from "./doors/email";
export { MAX_TAKEN_PER_POLL, type PollReport, pollConnection, SFTP_POLL_ALL_JOB, SFTP_POLL_JOB, SftpPollPayload, schedulePolls } from "./doors/sftp-poll";
export { enqueueArrival, giveUpHostedArrival, HOSTED_ARRIVAL_ATTEMPTS, HOSTED_ARRIVAL_JOB, HostedArrivalPayload, handleHostedArrival } from "./doors/space-arrival";
export { type Door, type IngestEntry, ingest, pipelineForFiles, recordArrival, sweepOrphanRuns } from "./ingest";
export { giveUpRun, processRun } from "./process";
export { RUN_JOB, RUN_JOB_ATTEMPTS } from "../runs/record";
export { ProcessRunPayload } from "../runs/shapes";
