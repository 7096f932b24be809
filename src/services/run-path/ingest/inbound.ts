import { and, asc, eq } from "drizzle-orm";
import { AppError } from "../../../domain/errors";
import { newId } from "../../../domain/ids";
import type { RunSource } from "../../../domain/runs";
import type { ServiceContext } from "../../context";
import { findByIdempotencyKey, type RunBody, startRun } from "./start-run";

/**
 * How a file received for a connection (hosted SFTP, documents, the
 * customer-SFTP poller, e-mail) enters the path, behind ingest(): one run
 * per active inbound pipeline of the connection, each
 * reading the file afresh (`openBody` is called once per pipeline), and one
 * arrival record saying what happened. A file that starts nothing is
 * recorded with the reason, never dropped silently.
 */
export const ARRIVAL_TRANSPORTS = ["sftp", "sftp_poll", "email", "documents"] as const;
export type ArrivalTransport = (typeof ARRIVAL_TRANSPORTS)[number];
export const ARRIVAL_OUTCOMES = ["started", "rejected", "ignored"] as const;
export type ArrivalOutcome = (typeof ARRIVAL_OUTCOMES)[number];

/** A file an admin puts into the inbound folder through the documents API is an upload by a person or key. */
const SOURCE: Record<ArrivalTransport, RunSource> = { sftp: "sftp", sftp_poll: "sftp", email: "email", documents: "upload" };

export interface ArrivalInput {
  workspaceId: string;
  connectionId: string;
  transport: ArrivalTransport;
  filename?: string | null;
  path?: string | null;
  size?: number | null;
  outcome: ArrivalOutcome;
  reason?: string | null;
  runIds?: string[];
  /** Facts about the arrival without secrets (sender, subject, remote mtime...). */
  metadata?: Record<string, unknown>;
}

export type ArrivalRow = typeof import("../../../../db/pg/schema").arrivals.$inferSelect;

export async function recordArrival(ctx: ServiceContext, a: ArrivalInput): Promise<ArrivalRow> {
  const row: ArrivalRow = {
    id: newId("arrival"),
    workspaceId: a.workspaceId,
    connectionId: a.connectionId,
    transport: a.transport,
    filename: a.filename ?? null,
    path: a.path ?? null,
    size: a.size ?? null,
    outcome: a.outcome,
    reason: a.reason ?? null,
    runIds: a.runIds ?? [],
    metadata: a.metadata ?? {},
    createdAt: ctx.clock.now(),
  };
  await ctx.db.tx((w) => w.insert(ctx.db.t.arrivals).values(row));
  if (a.outcome !== "started") ctx.log.info({ connectionId: a.connectionId, transport: a.transport, filename: a.filename, reason: a.reason }, "arrival started no run");
  return row;
}

export interface StartInboundRunsOptions {
  workspaceId: string;
  connectionId: string;
  transport: ArrivalTransport;
  filename: string;
  /** Opens the file's bytes; called once per pipeline. */
  openBody: () => Promise<RunBody>;
  mimetype?: string;
  path?: string;
  size?: number;
  /**
   * The transport's name for this file (e.g. `sftp:<path>:<mtime>:<size>`):
   * starting it again returns the runs already started (one per pipeline).
   */
  idempotencyKey?: string;
  metadata?: Record<string, unknown>;
}

export interface InboundResult {
  arrival: ArrivalRow;
  runIds: string[];
}

export async function startInboundRuns(ctx: ServiceContext, opts: StartInboundRunsOptions): Promise<InboundResult> {
  // Files stored in a space (hosted SFTP, documents) are counted as they are stored (run-path/doors/space-arrival.ts): this job may run again for one file.
  if (opts.transport !== "sftp" && opts.transport !== "documents" && opts.size) ctx.metrics.bytesReceived(opts.transport === "email" ? "email" : "customer_sftp", opts.size);
  const p = ctx.db.t.pipelines;
  const pipelines = await ctx.db.read
    .select({ id: p.id, name: p.name })
    .from(p)
    .where(and(eq(p.workspaceId, opts.workspaceId), eq(p.connectionId, opts.connectionId), eq(p.direction, "inbound"), eq(p.isActive, true)))
    .orderBy(asc(p.createdAt));
  const base = { workspaceId: opts.workspaceId, connectionId: opts.connectionId, transport: opts.transport, filename: opts.filename, path: opts.path ?? null, size: opts.size ?? null, metadata: opts.metadata };
  if (pipelines.length === 0) {
    const arrival = await recordArrival(ctx, { ...base, outcome: "ignored", reason: "the connection has no active inbound pipeline" });
    return { arrival, runIds: [] };
  }
  const runIds: string[] = [];
  const failures: string[] = [];
  for (const pipeline of pipelines) {
    const idempotencyKey = opts.idempotencyKey ? `${opts.idempotencyKey}:${pipeline.id}` : undefined;
    if (idempotencyKey) {
      // Checked before the body is opened: a file sent again must not open (and leak) a read of it.
      const existing = await findByIdempotencyKey(ctx, opts.workspaceId, idempotencyKey);
      if (existing) {
        runIds.push(existing.row.id);
        continue;
      }
    }
    try {
      const run = await startRun(ctx, {
        workspaceId: opts.workspaceId,
        pipelineId: pipeline.id,
        filename: opts.filename,
        body: await opts.openBody(),
        source: SOURCE[opts.transport],
        mimetype: opts.mimetype,
        path: opts.path,
        idempotencyKey,
        metadata: opts.metadata,
      });
      runIds.push(run.row.id);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      failures.push(`pipeline '${pipeline.name}': ${err.message}`);
    }
  }
  const arrival = await recordArrival(ctx, {
    ...base,
    outcome: runIds.length > 0 ? "started" : "rejected",
    reason: failures.length > 0 ? failures.join("; ") : null,
    runIds,
  });
  return { arrival, runIds };
}
