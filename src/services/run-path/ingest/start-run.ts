import { and, eq } from "drizzle-orm";
import { uniqueViolation } from "../../../../db/client";
import { runKeys, safeFilename } from "../../../adapters/storage/keys";
import { AppError } from "../../../domain/errors";
import { newId } from "../../../domain/ids";
import { currentRequestId } from "../../../domain/request-context";
import type { RunSource } from "../../../domain/runs";
import type { Actor, ServiceContext } from "../../context";
import { collectNow, streamed, transferred } from "../../../runtime/gc";
import type { Speculation } from "../../../engine/types";
import type { PipelineRow } from "../../pipelines/record";
import { isArchiveName, splitArchive } from "./archive";
import { engineRequest, type RunForEngine, versionForEngine } from "../process/engine-request";
import { pipelineForFiles } from "./pipeline-for-files";
import { loadRun, type RunRecord, type RunRow } from "../../runs/record";
import { publishStatus } from "../announce/live";
import { queueRun } from "./queue-run";
import { recordAudit } from "../../audit";

/** Uploads at least this large are followed by a full collection. */
const COLLECT_AFTER_BYTES = 32 * 1024 * 1024;

export type RunBody = Uint8Array | string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface StartRunOptions {
  workspaceId: string;
  pipelineId: string;
  /** The name the file arrived with; only its last path component is kept. */
  filename: string;
  /** Streamed to storage as it arrives; never held whole. */
  body: RunBody;
  source: RunSource;
  /** The sender's content type; guessed from the file name when absent or generic. */
  mimetype?: string;
  /** Where the file came from (an SFTP remote path); default the original's object key. */
  path?: string;
  /** A transport's name for this file (e.g. an SFTP path and mtime): a second start with it returns the first run. */
  idempotencyKey?: string;
  /** Largest body accepted; default MAX_UPLOAD_BYTES. */
  maxBytes?: number;
  /** The size the sender announced (an upload's content-length), if any: the engine may begin on a file of suitable size while it arrives. */
  expectedBytes?: number;
  /** Facts about the arrival kept in the run's metadata (e.g. the e-mail sender). */
  metadata?: Record<string, unknown>;
  /** The caller, when a key started the run (an upload): the audit log records it. Doors without a caller record nothing. */
  by?: Actor;
  /** A member of a zip archive: the archive's run and the member's path in it (metadata.archive). */
  archive?: { runId: string; filename: string; member: string };
  /** The file is an earlier run's original, processed again under this pipeline version (reprocessRun). */
  reprocess?: { runId: string; version: number };
}

/**
 * How a file enters one pipeline, behind ingest() (an upload, an outbound
 * upload completed, a reprocess, each file received for a connection's
 * pipelines, an archive's members). The file is stored first and the run
 * row (with its job, in the same transaction) after, so a file the service
 * accepted is never lost; if the row cannot be written, the stored object is
 * removed again.
 */
export async function startRun(ctx: ServiceContext, opts: StartRunOptions): Promise<RunRecord> {
  const { workspaceId } = opts;
  if (opts.idempotencyKey) {
    const existing = await findByIdempotencyKey(ctx, workspaceId, opts.idempotencyKey);
    if (existing) return existing;
  }
  const pipeline = await pipelineForFiles(ctx, { workspaceId, pipelineId: opts.pipelineId, source: opts.source });
  const [conn] = await ctx.db.read
    .select({ name: ctx.db.t.connections.name })
    .from(ctx.db.t.connections)
    .where(eq(ctx.db.t.connections.id, pipeline.connectionId));

  const id = newId("run");
  // The HTTP request that started the run, if one did (docs/decisions/runs.md).
  const requestId = currentRequestId();
  const metadata: RunRow["metadata"] = {
    source: opts.source,
    ...(requestId ? { requestId } : {}),
    ...(opts.metadata ? { arrival: opts.metadata } : {}),
    ...(opts.archive ? { archive: opts.archive } : {}),
  };
  const filename = safeFilename(opts.filename, `upload-${id}`);
  const keys = runKeys(workspaceId, id, filename);
  const mimetype = contentType(opts.mimetype, filename);
  const maxBytes = opts.maxBytes ?? ctx.settings.maxUploadBytes;

  // The engine's threads load while the file streams in (they are already running except after a start);
  // an idle engine may begin on the file as it arrives, and the run's job then takes that work.
  ctx.engine.warm?.();
  const early =
    opts.expectedBytes === undefined
      ? null
      : await speculate(ctx, { id, workspaceId, filename, originalKey: keys.original, direction: pipeline.direction, source: opts.source, metadata }, pipeline, opts.expectedBytes);
  let tooLarge = false;
  const stored = await ctx.storage
    .putArriving(keys.original, limited(opts.body, maxBytes, () => (tooLarge = true)), { contentType: mimetype, observe: early?.observe })
    .catch(async (e) => {
      early?.cancel(e instanceof Error ? e : new Error(String(e)));
      await ctx.storage.delete(keys.original).catch(() => {});
      if (tooLarge) throw new AppError("payload_too_large", `file: larger than the ${maxBytes}-byte upload limit`);
      throw e;
    });

  // A large upload leaves its request buffers to the collector, which runs late on an idle thread:
  // collected now, before the run's worker threads add their own memory (docs/decisions/engine.md, "Memory").
  // Not when the engine read the file as it arrived: its workers are busy and this thread coordinates them,
  // so the ~40 ms pause would idle both (6% of the 1M-row run), and `streamed` already bounded the upload's garbage.
  if (!early && stored.size >= COLLECT_AFTER_BYTES) collectNow();
  // Other doors count their bytes where the file is received (a file there may start several runs).
  if (opts.source === "upload" && !opts.reprocess) ctx.metrics.bytesReceived("upload", stored.size);

  // A zip archive: each member the pipeline reads becomes its own run through this same door; the archive's run only records them.
  const archive = isArchiveName(filename) && pipeline.direction === "inbound" && !opts.archive;
  if (archive) {
    try {
      const body = await ctx.storage.get(keys.original);
      if (!body) throw new Error(`the stored archive ${keys.original} is missing`);
      metadata.archive = await splitArchive(body, ctx.settings.archive, pipeline.mappings.options.format, async (m, bytes) => {
        const run = await startRun(ctx, {
          ...opts,
          filename: m.filename,
          body: bytes,
          mimetype: undefined,
          path: `${opts.path ?? keys.original}#${m.member}`,
          idempotencyKey: opts.idempotencyKey ? `${opts.idempotencyKey}#${m.member}` : undefined,
          expectedBytes: undefined,
          archive: { runId: id, filename, member: m.member },
        });
        return run.row.id;
      });
    } catch (e) {
      await ctx.storage.delete(keys.original).catch(() => {});
      throw e;
    }
  }

  const now = ctx.clock.now();
  const row: RunRow = {
    id,
    workspaceId,
    pipelineId: pipeline.id,
    pipelineName: pipeline.name,
    connectionId: pipeline.connectionId,
    connectionName: conn?.name ?? "",
    schemaId: pipeline.schemaId,
    direction: pipeline.direction,
    status: archive ? "completed" : "pending",
    source: opts.source,
    filename,
    path: opts.path ?? keys.original,
    size: stored.size,
    mimetype,
    originalKey: keys.original,
    processedKey: null,
    rejectsKey: null,
    metadata,
    errorMessage: null,
    attempt: 1,
    // Null: the version current when it is processed; a reprocess names its own.
    pipelineVersion: opts.reprocess?.version ?? null,
    reprocessOf: opts.reprocess?.runId ?? null,
    idempotencyKey: opts.idempotencyKey ?? null,
    processedAt: archive ? now : null,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await ctx.db.tx(async (w) => {
      await w.insert(ctx.db.t.pipelineRuns).values(row);
      if (!archive) await queueRun(ctx, w, id, 1);
      if (opts.by) await recordAudit(ctx, w, opts.by, { workspaceId, ...auditOf(opts), resourceType: "run", resourceId: id });
    });
  } catch (e) {
    early?.cancel(e instanceof Error ? e : new Error(String(e)));
    await ctx.storage.delete(keys.original).catch((err) => ctx.log.warn({ err, key: keys.original }, "orphan original not removed"));
    // Two deliveries of one file raced: the first one's run stands.
    if (opts.idempotencyKey && uniqueViolation(e)) {
      const existing = await findByIdempotencyKey(ctx, workspaceId, opts.idempotencyKey);
      if (existing) return existing;
    }
    throw e;
  }
  ctx.metrics.runStarted(row.direction);
  await publishStatus(ctx, row, row.status as "pending", null);
  // The run as created: a worker may already have taken it, but the caller is told what it started.
  return { row, pipelineName: pipeline.name, connectionName: conn?.name ?? null };
}

/**
 * Asks the engine to begin on an inbound file while it arrives
 * (EnginePool.speculate); the request is the one the run's job will make,
 * so the job takes the work only if the pipeline and schema are unchanged.
 */
async function speculate(ctx: ServiceContext, run: RunForEngine, pipeline: PipelineRow, expectedBytes: number): Promise<Speculation | null> {
  if (!ctx.engine.speculate || run.direction !== "inbound") return null;
  const used = await versionForEngine(ctx, pipeline);
  return used ? ctx.engine.speculate(engineRequest(ctx, run, used, used.schema), expectedBytes) : null;
}

/** A new run's audit record: an upload creates a run; a reprocess names the run it reprocesses and the version. */
function auditOf(opts: StartRunOptions): { action: string; fields: string[] } {
  return opts.reprocess ? { action: "run.reprocess", fields: ["reprocessOf", "version"] } : { action: "run.create", fields: ["file"] };
}

export async function findByIdempotencyKey(ctx: ServiceContext, workspaceId: string, key: string): Promise<RunRecord | null> {
  const run = ctx.db.t.pipelineRuns;
  const [hit] = await ctx.db.read
    .select({ id: run.id })
    .from(run)
    .where(and(eq(run.workspaceId, workspaceId), eq(run.idempotencyKey, key)));
  return hit ? loadRun(ctx, { workspaceId, id: hit.id }) : null;
}

const GENERIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream"]);

function contentType(given: string | undefined, filename: string): string {
  const t = (given ?? "").split(";")[0]!.trim().toLowerCase();
  if (!GENERIC_TYPES.has(t)) return t;
  return Bun.file(filename).type.split(";")[0]!;
}

/**
 * The body as chunks, cut off with an error once it passes `maxBytes`.
 *
 * Each chunk is counted towards the collections (`transferred`, `streamed`):
 * the upload's buffers are garbage on this thread as soon as they are
 * written, but its collector runs late; with the engine's workers busy in
 * the same process (a file read while it arrives) that garbage added ~40 MiB
 * to the service's peak (306 MiB for a 255 MB upload). `streamed` (an eden
 * collection every 16 MiB, every fourth one full) keeps it at 275-280 MiB at
 * no measurable cost (docs/decisions/engine.md, "Performance").
 */
async function* limited(body: RunBody, maxBytes: number, onTooLarge: () => void): AsyncGenerator<Uint8Array> {
  const chunks: AsyncIterable<Uint8Array> | Uint8Array[] =
    typeof body === "string" ? [new TextEncoder().encode(body)] : body instanceof Uint8Array ? [body] : (body as AsyncIterable<Uint8Array>);
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      onTooLarge();
      throw new AppError("payload_too_large", `file: larger than the ${maxBytes}-byte upload limit`);
    }
    transferred(chunk.byteLength);
    streamed(chunk.byteLength);
    yield chunk;
  }
}
