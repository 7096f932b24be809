import { and, eq, ne, sql } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { CallOptions, ServiceContext } from "../context";
import { assertOpen, loadUpload, type PartRow, partKey, presentPart } from "./record";
import type { OutboundPartReceived } from "./shapes";
import { recordAudit } from "../audit";

/** The part's rows: a value (GraphQL, tRPC), or a reader called only once the session and part number are accepted (REST's body). */
export type PartRows = unknown | (() => Promise<unknown>);

/**
 * `PUT /outbound/uploads/{uploadId}/parts/{partNumber}`: stores one part's
 * rows (a JSON array of objects), replacing an earlier version of the same
 * part (last one wins). The rows are kept one JSON object per line joined by
 * `,\n`, so that completion concatenates parts into one JSON array without
 * parsing them again.
 */
export async function putOutboundPart(
  ctx: ServiceContext,
  opts: CallOptions & { uploadId: string; partNumber: unknown; rows: PartRows },
): Promise<OutboundPartReceived> {
  const workspaceId = opts.actor.workspaceId;
  const upload = await loadUpload(ctx, { workspaceId, id: opts.uploadId });
  assertOpen(upload, ctx.clock.now());
  const partNumber = parsePartNumber(opts.partNumber, upload.totalParts);
  const raw = typeof opts.rows === "function" ? await (opts.rows as () => Promise<unknown>)() : opts.rows;
  const { text, rowCount } = serializeRows(raw);
  const bytes = Buffer.byteLength(text);

  const p = ctx.db.t.outboundUploadParts;
  const [others] = await ctx.db.read
    .select({ size: sql<number>`coalesce(sum(${p.size}), 0)` })
    .from(p)
    .where(and(eq(p.uploadId, upload.id), ne(p.partNumber, partNumber)));
  const max = ctx.settings.maxUploadBytes;
  if (Number(others?.size ?? 0) + bytes > max) {
    throw new AppError("payload_too_large", `body: the upload's parts together would pass the ${max}-byte limit of one file (MAX_UPLOAD_BYTES)`);
  }

  const key = partKey(workspaceId, upload.id, partNumber);
  const info = await ctx.storage.put(key, text, { contentType: "application/json" });
  ctx.metrics.bytesReceived("outbound", info.size);
  const now = ctx.clock.now();
  const part: PartRow = { uploadId: upload.id, partNumber, rowCount, size: info.size, etag: info.etag, receivedAt: now };
  const u = ctx.db.t.outboundUploads;
  try {
    return await ctx.db.tx(async (w) => {
      // Completed or expired while the part was being stored: refused, as if it had come a moment later.
      assertOpen(await loadUpload(ctx, { workspaceId, id: upload.id }, w), now);
      await w
        .insert(p)
        .values(part)
        .onConflictDoUpdate({ target: [p.uploadId, p.partNumber], set: { rowCount, size: info.size, etag: info.etag, receivedAt: now } });
      await w.update(u).set({ updatedAt: now }).where(eq(u.id, upload.id));
      await recordAudit(ctx, w, opts.actor, { workspaceId, action: "outboundUpload.putPart", resourceType: "outboundUpload", resourceId: upload.id, fields: [`parts/${partNumber}`] });
      const partsReceived = await w.$count(p, eq(p.uploadId, upload.id));
      return { uploadId: upload.id, totalParts: upload.totalParts, partsReceived, ...presentPart(part) };
    });
  } catch (e) {
    // The session ended meanwhile and its combined file no longer reads parts: this one would only be left behind.
    if (e instanceof AppError && e.code === "conflict") await ctx.storage.delete(key).catch(() => {});
    throw e;
  }
}

function parsePartNumber(raw: unknown, totalParts: number): number {
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^[0-9]{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > totalParts) {
    throw new AppError("invalid_input", `partNumber: must be a whole number from 1 to ${totalParts} (the upload's totalParts)`);
  }
  return n;
}

/** The rows one JSON object per line, joined by `,\n` (no brackets); a 400 naming the first item that is not an object. */
export function serializeRows(raw: unknown): { text: string; rowCount: number } {
  if (!Array.isArray(raw)) {
    throw new AppError("invalid_input", `body: must be a JSON array of row objects, not ${describe(raw)}`);
  }
  for (let i = 0; i < raw.length; i++) {
    const v = raw[i];
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
      throw new AppError("invalid_input", `body[${i}]: must be a row object, not ${describe(v)}`);
    }
  }
  return { text: raw.map((r) => JSON.stringify(r)).join(",\n"), rowCount: raw.length };
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (v === undefined) return "nothing";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}
