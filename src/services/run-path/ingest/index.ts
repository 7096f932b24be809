import type { CallOptions, ServiceContext } from "../../context";
import type { RunRecord } from "../../runs/record";
import { type ArrivalTransport, type InboundResult, type StartInboundRunsOptions, startInboundRuns } from "./inbound";
import { startAttempt } from "./retry";
import { type StartRunOptions, startRun } from "./start-run";

/**
 * Ingest: the one way into the run path. Every door calls ingest() with its
 * name; what comes out is a `pending` run with its `run.process` job queued
 * in the same transaction (queue-run.ts), announced on the live bus.
 *
 * - one named pipeline: `upload` (REST upload), `outbound` (an outbound
 *   upload completed), `reprocess` (an earlier run's original, again):
 *   start-run.ts stores the file and records the run (a zip archive's
 *   members each become a run the same way, archive.ts);
 * - every active inbound pipeline of a connection: `sftp` (hosted SFTP),
 *   `documents` (a file put into the inbound folder), `sftp_poll` (the
 *   customer's own server), `email`: inbound.ts starts one run per pipeline
 *   and records the arrival, even one that started nothing;
 * - `retry`: a failed run's next attempt (retry.ts).
 */
type FileFor<D> = { door: D } & Omit<StartRunOptions, "source" | "archive" | "reprocess">;
export type PipelineEntry =
  | FileFor<"upload">
  | FileFor<"outbound">
  | ({ door: "reprocess" } & Omit<StartRunOptions, "archive"> & Required<Pick<StartRunOptions, "reprocess">>);
export type ConnectionEntry = { door: ArrivalTransport } & Omit<StartInboundRunsOptions, "transport">;
export type RetryEntry = { door: "retry"; id: string } & CallOptions;
export type IngestEntry = PipelineEntry | ConnectionEntry | RetryEntry;
export type Door = IngestEntry["door"];

export function ingest(ctx: ServiceContext, entry: ConnectionEntry): Promise<InboundResult>;
export function ingest(ctx: ServiceContext, entry: PipelineEntry | RetryEntry): Promise<RunRecord>;
export function ingest(ctx: ServiceContext, entry: IngestEntry): Promise<InboundResult | RunRecord> {
  switch (entry.door) {
    case "upload":
    case "outbound": {
      const { door, ...opts } = entry;
      return startRun(ctx, { ...opts, source: door });
    }
    case "reprocess": {
      const { door: _, ...opts } = entry;
      return startRun(ctx, opts);
    }
    case "retry":
      return startAttempt(ctx, { actor: entry.actor, version: entry.version, id: entry.id });
    default: {
      const { door, ...opts } = entry;
      return startInboundRuns(ctx, { ...opts, transport: door });
    }
  }
}

export { ARRIVAL_OUTCOMES, ARRIVAL_TRANSPORTS, type ArrivalOutcome, type ArrivalRow, type ArrivalTransport, type InboundResult, recordArrival } from "./inbound";
export { pipelineForFiles } from "./pipeline-for-files";
export { type RunBody } from "./start-run";
export { ORPHAN_AFTER_MS, sweepOrphanRuns } from "./sweep-orphans";
