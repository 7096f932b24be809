import { and, asc, eq } from "drizzle-orm";
import type { Reader } from "../../../db/client";
import type { outboundUploadParts, outboundUploads } from "../../../db/pg/schema";
import { AppError, notFound } from "../../domain/errors";
import type { OutputFormat } from "../../engine/types";
import type { ServiceContext } from "../context";
import type { OutboundPart, OutboundUpload, OutboundUploadStatus } from "./shapes";

export type UploadRow = typeof outboundUploads.$inferSelect;
export type PartRow = typeof outboundUploadParts.$inferSelect;

/**
 * Parts live beside each other under one prefix, so that one deletePrefix
 * removes them; the number is zero-padded so key order is part order.
 */
export function partsPrefix(workspaceId: string, uploadId: string): string {
  return `ws/${segment(workspaceId)}/outbound-uploads/${segment(uploadId)}/`;
}
export function partKey(workspaceId: string, uploadId: string, partNumber: number): string {
  return `${partsPrefix(workspaceId, uploadId)}part-${String(partNumber).padStart(5, "0")}.json`;
}

function segment(id: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new AppError("invalid_input", `not a valid id for a storage key: '${String(id).slice(0, 80)}'`);
  return id;
}

/** A session of the caller's workspace; any other id is a 404, whoever owns it. */
export async function loadUpload(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read): Promise<UploadRow> {
  const u = ctx.db.t.outboundUploads;
  const [row] = await r.select().from(u).where(and(eq(u.id, opts.id), eq(u.workspaceId, opts.workspaceId)));
  if (!row) throw notFound("outbound upload", opts.id);
  return row;
}

export async function loadParts(ctx: ServiceContext, uploadId: string, r: Reader = ctx.db.read): Promise<PartRow[]> {
  const p = ctx.db.t.outboundUploadParts;
  return r.select().from(p).where(eq(p.uploadId, uploadId)).orderBy(asc(p.partNumber));
}

/** `initiated` past its expiry reads as `expired` at once, before the cron job records it. */
export function effectiveStatus(row: UploadRow, now: Date): OutboundUploadStatus {
  if (row.status === "initiated" && row.expiresAt.getTime() <= now.getTime()) return "expired";
  return row.status as OutboundUploadStatus;
}

/** Parts may be sent and the session completed only while it is `initiated` and not past its expiry (409 otherwise). */
export function assertOpen(row: UploadRow, now: Date): void {
  const status = effectiveStatus(row, now);
  if (status === "initiated") return;
  if (status === "expired") {
    throw new AppError(
      "conflict",
      `outbound upload '${row.id}' expired at ${row.expiresAt.toISOString()} without being completed; its parts are deleted. Start a new upload (POST /outbound/uploads)`,
    );
  }
  if (status === "failed") throw new AppError("conflict", `outbound upload '${row.id}' failed: ${row.errorMessage ?? "no reason recorded"}`);
  throw new AppError("conflict", `outbound upload '${row.id}' is already completed (run '${row.runId}'); its parts can no longer change`);
}

export function presentPart(p: PartRow): OutboundPart {
  return { partNumber: p.partNumber, rowCount: p.rowCount, size: p.size, etag: p.etag, receivedAt: p.receivedAt };
}

export function presentUpload(row: UploadRow, parts: PartRow[], now: Date, currentConnectionName: string | null): OutboundUpload {
  return {
    uploadId: row.id,
    status: effectiveStatus(row, now),
    totalParts: row.totalParts,
    filename: row.filename,
    outputFilename: row.outputFilename,
    outputFormat: row.outputFormat as OutputFormat,
    connectionId: row.connectionId,
    connectionName: currentConnectionName ?? row.connectionName,
    pipelineId: row.pipelineId,
    pipelineName: row.pipelineName,
    partsReceived: parts.length,
    parts: parts.map(presentPart),
    runId: row.runId,
    errorMessage: row.errorMessage,
    expiresAt: row.expiresAt,
    endedAt: row.endedAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
