import { and, eq } from "drizzle-orm";
import { FINAL_STATUSES, type RunMetadata, type RunStatus } from "../../../domain/runs";
import type { ProcessOutcome } from "../../../engine/types";
import type { ServiceContext } from "../../context";
import { deliverRun, PermanentDeliveryError } from "./delivery";
import { enqueueRunEvent } from "../announce/run-events";
import { connectionPgp } from "../../connections/pgp-keys";
import { engineRequest, versionForEngine } from "./engine-request";
import { reportProgress } from "./progress";
import { loadRunRow, type RunRow } from "../../runs/record";
import { publishStatus } from "../announce/live";

export interface ProcessRunOptions {
  runId: string;
  /** The attempt the job was enqueued for; a job left over from an earlier attempt does nothing. */
  attempt?: number;
  /** Aborted when the queue stops: the engine stops and the job is handed back. */
  signal?: AbortSignal;
}

/**
 * The `run.process` job: read the original, map and validate it on a
 * worker thread, write the processed file, record the outcome.
 *
 * Idempotent: a run that already ended is left alone, and a job that runs
 * again after a crash writes the same keys, so a run never gets a second
 * output. Every status change is a guarded update (`where status = ...`),
 * so two workers can never both move one run. A thrown error (the engine's
 * worker died, storage or database unreachable) leaves the run
 * `processing` and the queue retries the job, and so does an engine
 * outcome marked as an internal failure; a file the engine cannot read
 * (malformed, over a limit, nested too deep: `failure: "input"`) is an
 * outcome, and the run fails at once with the engine's message.
 *
 * Returns the status the run ended in, or null when there was nothing to do.
 */
export async function processRun(ctx: ServiceContext, opts: ProcessRunOptions): Promise<RunStatus | null> {
  const started = performance.now();
  const row = await loadRunRow(ctx, opts.runId);
  if (!row) {
    ctx.log.warn({ runId: opts.runId }, "run.process: no such run");
    return null;
  }
  if (opts.attempt !== undefined && row.attempt !== opts.attempt) return null;
  if ((FINAL_STATUSES as readonly string[]).includes(row.status)) return null;

  const { pipelineRuns: run, pipelines: p } = ctx.db.t;
  const claimedAt = ctx.clock.now();
  if (row.status === "pending") {
    const moved = await ctx.db.tx((w) =>
      w
        .update(run)
        .set({ status: "processing", updatedAt: claimedAt })
        .where(and(eq(run.id, row.id), eq(run.status, "pending"), eq(run.attempt, row.attempt)))
        .returning({ id: run.id }),
    );
    if (moved.length === 0) return null;
    await publishStatus(ctx, row, "processing", "pending");
  }
  // Else the run is already `processing`: an earlier try of this job died mid-way, and the queue's lease makes this the only worker now.
  const queuedMs = Math.max(0, claimedAt.getTime() - row.updatedAt.getTime());

  const [pipeline] = await ctx.db.read
    .select()
    .from(p)
    .where(and(eq(p.id, row.pipelineId), eq(p.workspaceId, row.workspaceId)));
  if (!pipeline) {
    return finish(ctx, row, {
      status: "failed",
      errorMessage: `pipeline '${row.pipelineId}' (${row.pipelineName}) was deleted before the run was processed; the original file is kept`,
      metadata: { timings: { queuedMs, totalMs: queuedMs + elapsed(started) } },
    });
  }
  // The version a reprocess named, else the pipeline's current one (docs/decisions/pipeline-versions.md).
  const used = await versionForEngine(ctx, pipeline, row.pipelineVersion ?? pipeline.version);
  if (!used) {
    return finish(ctx, row, {
      status: "failed",
      errorMessage: `version ${row.pipelineVersion ?? pipeline.version} of pipeline '${pipeline.name}' cannot be read (its schema '${pipeline.schemaId}' no longer exists); point the pipeline at a schema and retry the run`,
      metadata: { timings: { queuedMs, totalMs: queuedMs + elapsed(started) } },
    });
  }
  const { schema, mappings } = used;
  const pipelineVersion = used.version;

  const outbound = row.direction === "outbound";
  const request = engineRequest(ctx, row, { mappings }, schema);
  const pgp = await connectionPgp(ctx, row);
  if (pgp.inbound && !outbound) request.pgp = pgp.inbound;
  const outputFormat = request.outputFormat;
  const progress = reportProgress(ctx, row);
  let outcome: ProcessOutcome;
  try {
    outcome = await ctx.engine.process(request, opts.signal, progress.counters);
  } finally {
    await progress.stop();
  }

  // The queue is stopping: the run stays `processing` and the job goes back for another worker.
  if (opts.signal?.aborted) throw new Error(`run ${row.id}: processing interrupted by shutdown`);
  if (!outcome.ok && (outcome.failure ?? (outcome.internalError === undefined ? "input" : "internal")) === "internal") {
    // Not the file's fault (a worker died, storage failed): the queue tries again with backoff, and gives up after the last attempt.
    ctx.log.error({ runId: row.id, attempt: row.attempt, internalError: outcome.internalError }, "run.process: engine failed unexpectedly");
    throw new Error(outcome.errorMessage ?? "the engine failed unexpectedly");
  }
  const metadata: RunMetadata = {
    rows: outcome.counts,
    errors: outcome.errors,
    timings: { queuedMs, processMs: Math.round(outcome.processMs), totalMs: queuedMs + elapsed(started), ...(outcome.streamed ? { whileArriving: true } : {}) },
  };
  if (outcome.input) metadata.input = outcome.input;
  if (outcome.processed) metadata.output = { format: outcome.processed.format, size: outcome.processed.size, rows: outcome.processed.rows };
  if (outcome.rejects) metadata.rejects = { size: outcome.rejects.size, rows: outcome.rejects.rows };
  if (!outcome.ok) {
    return finish(ctx, row, {
      status: "failed",
      errorMessage: outcome.errorMessage ?? "the file could not be processed",
      metadata,
      schemaId: schema.id,
      pipelineVersion,
      rejectsKey: outcome.rejects?.key ?? null,
    });
  }
  if (outbound && outcome.processed) {
    // Written to the connection's destination before the run says `delivered` (src/services/run-path/process/delivery).
    try {
      metadata.delivery = await deliverRun(ctx, row, { key: outcome.processed.key, format: outputFormat, pgp: mappings.options.pgpEncrypt ? pgp : undefined });
    } catch (e) {
      // Storage or the customer's server failing: the queue tries again with backoff, and the run fails after the last attempt with this message.
      if (!(e instanceof PermanentDeliveryError)) {
        ctx.log.warn({ runId: row.id, attempt: row.attempt, err: e }, "run.process: delivery failed; the job will retry");
        throw e;
      }
      return finish(ctx, row, {
        status: "failed",
        errorMessage: e.message,
        metadata,
        schemaId: schema.id,
      pipelineVersion,
        processedKey: outcome.processed.key,
        rejectsKey: outcome.rejects?.key ?? null,
      });
    }
  }
  return finish(ctx, row, {
    status: outbound ? "delivered" : "completed",
    errorMessage: null,
    metadata,
    schemaId: schema.id,
    pipelineVersion,
    processedKey: outcome.processed?.key ?? null,
    rejectsKey: outcome.rejects?.key ?? null,
  });
}

interface Finish {
  status: Extract<RunStatus, "completed" | "delivered" | "failed">;
  errorMessage: string | null;
  metadata: RunMetadata;
  schemaId?: string;
  /** The pipeline version the run was processed with. */
  pipelineVersion?: number;
  processedKey?: string | null;
  rejectsKey?: string | null;
}

/**
 * Records the outcome, only if this attempt still owns the run. A run a
 * person acknowledged meanwhile keeps `acknowledged` but gets its results.
 */
async function finish(ctx: ServiceContext, row: RunRow, f: Finish): Promise<RunStatus | null> {
  const run = ctx.db.t.pipelineRuns;
  const now = ctx.clock.now();
  const results = {
    errorMessage: f.errorMessage,
    metadata: { ...row.metadata, ...f.metadata, attempts: row.attempt },
    processedAt: now,
    processedKey: f.processedKey ?? null,
    rejectsKey: f.rejectsKey ?? null,
    schemaId: f.schemaId ?? row.schemaId,
    pipelineVersion: f.pipelineVersion ?? row.pipelineVersion,
    updatedAt: now,
  };
  const ended = await ctx.db.tx(async (w) => {
    const moved = await w
      .update(run)
      .set({ ...results, status: f.status })
      .where(and(eq(run.id, row.id), eq(run.status, "processing"), eq(run.attempt, row.attempt)))
      .returning({ id: run.id });
    if (moved.length > 0) {
      await enqueueRunEvent(ctx, w, row, f.status, "processing");
      return f.status;
    }
    await w
      .update(run)
      .set(results)
      .where(and(eq(run.id, row.id), eq(run.status, "acknowledged"), eq(run.attempt, row.attempt)));
    return null;
  });
  if (ended) {
    ctx.metrics.runFinished(ended, row.direction, (f.metadata.timings?.totalMs ?? 0) / 1000);
    if (f.metadata.rows) ctx.metrics.rowsProcessed(f.metadata.rows);
    await publishStatus(ctx, row, ended, "processing");
  }
  return ended;
}

const elapsed = (since: number) => Math.round(performance.now() - since);
