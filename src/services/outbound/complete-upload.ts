import { and, eq, ne } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { OutputFormat } from "../../engine/types";
import type { Actor, CallOptions, ServiceContext } from "../context";
import { ingest } from "../run-path/ingest";
import { assertOpen, loadParts, loadUpload, type PartRow, partKey, partsPrefix, type UploadRow } from "./record";
import { CompleteOutboundUploadInput, type OutboundUploadCompleted } from "./shapes";
import { recordAudit } from "../audit";

const invalid = (message: string) => new AppError("invalid_input", message);

/** The run's idempotency key: completing twice, one after the other or at once, starts one run. */
export const uploadRunKey = (uploadId: string) => `outbound-upload:${uploadId}`;

/**
 * `POST /outbound/uploads/{uploadId}/complete`: checks the listed parts
 * (400 and nothing started unless they are exactly 1..totalParts, each
 * received), combines them in part order into one JSON array, streamed
 * part by part into the run's original file, and starts the run through
 * ingest (door `outbound`). A completed session answers the same again without starting
 * anything; two completes at once start one run (the run's idempotency
 * key) and both answer it. The parts' objects are deleted once the run has
 * its file; their rows stay, describing what was combined.
 */
export async function completeOutboundUpload(
  ctx: ServiceContext,
  opts: CallOptions & { uploadId: string; input: CompleteOutboundUploadInput },
): Promise<OutboundUploadCompleted> {
  const workspaceId = opts.actor.workspaceId;
  const upload = await loadUpload(ctx, { workspaceId, id: opts.uploadId });
  const input = parseInput(CompleteOutboundUploadInput, opts.input);
  if (upload.status === "completed") return answer(upload);
  assertOpen(upload, ctx.clock.now());
  const parts = await loadParts(ctx, upload.id);
  checkListed(upload, input.parts, parts);

  const max = ctx.settings.maxUploadBytes;
  const bytes = parts.reduce((sum, p) => sum + p.size + 2, 4);
  if (bytes > max) throw new AppError("payload_too_large", `parts: combined they pass the ${max}-byte limit of one file (MAX_UPLOAD_BYTES)`);

  const p = ctx.db.t.pipelines;
  const [pipeline] = await ctx.db.read.select({ id: p.id }).from(p).where(and(eq(p.id, upload.pipelineId), eq(p.workspaceId, workspaceId)));
  if (!pipeline) {
    const message = `pipeline '${upload.pipelineName}' was deleted before the upload was completed; nothing was started`;
    await end(ctx, upload, { status: "failed", errorMessage: message });
    await purgeParts(ctx, upload);
    throw new AppError("conflict", `outbound upload '${upload.id}' failed: ${message}`);
  }

  const run = await ingest(ctx, {
    door: "outbound",
    workspaceId,
    pipelineId: upload.pipelineId,
    filename: upload.filename,
    body: combineParts(ctx, upload, parts),
    mimetype: "application/json",
    idempotencyKey: uploadRunKey(upload.id),
    metadata: {
      uploadId: upload.id,
      outputFormat: upload.outputFormat,
      outputFilename: upload.outputFilename,
      parts: upload.totalParts,
      rows: parts.reduce((sum, x) => sum + x.rowCount, 0),
    },
  });
  await end(ctx, upload, { status: "completed", runId: run.row.id }, opts.actor);
  await purgeParts(ctx, upload);
  return answer(await loadUpload(ctx, { workspaceId, id: upload.id }));
}

function answer(row: UploadRow): OutboundUploadCompleted {
  return {
    message: `Upload completed: ${row.totalParts} part${row.totalParts === 1 ? "" : "s"} combined into ${row.filename}; processing started`,
    filename: row.filename,
    uploadId: row.id,
    status: "completed",
    runId: row.runId!,
    outputFilename: row.outputFilename,
    outputFormat: row.outputFormat as OutputFormat,
  };
}

/** The listed parts must be exactly 1..totalParts, each once, each received (and unchanged, when an etag is given). */
function checkListed(upload: UploadRow, listed: { partNumber: number; etag?: string }[], received: PartRow[]): void {
  const total = upload.totalParts;
  if (listed.length !== total) {
    throw invalid(`parts: lists ${listed.length} part${listed.length === 1 ? "" : "s"}; this upload has totalParts ${total}, and each must be listed once`);
  }
  const byNumber = new Map(received.map((p) => [p.partNumber, p]));
  const seen = new Set<number>();
  const missing: number[] = [];
  listed.forEach((l, i) => {
    if (l.partNumber < 1 || l.partNumber > total) throw invalid(`parts[${i}].partNumber: must be from 1 to ${total} (the upload's totalParts)`);
    if (seen.has(l.partNumber)) throw invalid(`parts[${i}].partNumber: part ${l.partNumber} is listed twice`);
    seen.add(l.partNumber);
    const part = byNumber.get(l.partNumber);
    if (!part) missing.push(l.partNumber);
    else if (l.etag !== undefined && l.etag.replace(/^"|"$/g, "") !== part.etag) {
      throw invalid(`parts[${i}].etag: part ${l.partNumber} was replaced since; its etag is now "${part.etag}"`);
    }
  });
  if (missing.length > 0) {
    const list = missing.sort((a, b) => a - b);
    throw invalid(
      `parts: part${list.length === 1 ? "" : "s"} ${list.slice(0, 20).join(", ")}${list.length > 20 ? ", ..." : ""} ${list.length === 1 ? "has" : "have"} not been received (PUT /outbound/uploads/${upload.id}/parts/{partNumber})`,
    );
  }
}

const encoder = new TextEncoder();

/**
 * The parts as one JSON array, streamed: `[\n`, the rows of each part in
 * part order (each part's stored text is its rows joined by `,\n`), `,\n`
 * between non-empty parts, `\n]\n`. Only one part's chunk is in memory at a
 * time.
 */
async function* combineParts(ctx: ServiceContext, upload: UploadRow, parts: PartRow[]): AsyncGenerator<Uint8Array> {
  yield encoder.encode("[\n");
  let any = false;
  for (const part of [...parts].sort((a, b) => a.partNumber - b.partNumber)) {
    const body = await ctx.storage.get(partKey(upload.workspaceId, upload.id, part.partNumber));
    if (!body) throw new AppError("conflict", `parts: part ${part.partNumber} is no longer stored (the upload expired meanwhile?); start a new upload`);
    let started = false;
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      if (chunk.byteLength === 0) continue;
      if (!started) {
        if (any) yield encoder.encode(",\n");
        started = true;
        any = true;
      }
      yield chunk;
    }
  }
  yield encoder.encode(any ? "\n]\n" : "]\n");
}

/**
 * Leaves `initiated` (or `expired`, when the expiry job ran while a run was
 * already being started: the run stands, so the session is completed). A
 * completed session is never changed again.
 */
async function end(
  ctx: ServiceContext,
  upload: UploadRow,
  to: { status: "completed"; runId: string } | { status: "failed"; errorMessage: string },
  by?: Actor,
) {
  const u = ctx.db.t.outboundUploads;
  const now = ctx.clock.now();
  await ctx.db.tx(async (w) => {
    await w
      .update(u)
      .set({ ...to, endedAt: now, updatedAt: now })
      .where(and(eq(u.id, upload.id), ne(u.status, "completed")));
    if (by) await recordAudit(ctx, w, by, { workspaceId: upload.workspaceId, action: "outboundUpload.complete", resourceType: "outboundUpload", resourceId: upload.id, fields: ["status"] });
  });
}

/** Deletes the parts' objects; a failure is logged, and the expiry job's clean-up deletes them later. */
export async function purgeParts(ctx: ServiceContext, upload: Pick<UploadRow, "id" | "workspaceId">): Promise<void> {
  await ctx.storage
    .deletePrefix(partsPrefix(upload.workspaceId, upload.id))
    .catch((err) => ctx.log.warn({ err, uploadId: upload.id }, "outbound upload: parts not deleted; the expiry job removes them later"));
}
