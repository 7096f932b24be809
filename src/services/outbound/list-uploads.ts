import { and, desc, eq, inArray, type SQL } from "drizzle-orm";
import { z } from "zod";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { Id, type Page, PageQuery } from "../shared/shapes";
import { loadParts, presentUpload } from "./record";
import { OUTBOUND_UPLOAD_STATUSES, type OutboundUpload } from "./shapes";

export const ListOutboundUploadsQuery = PageQuery.extend({
  pipelineId: Id.optional(),
  connectionId: Id.optional(),
  status: z.enum(OUTBOUND_UPLOAD_STATUSES, { error: `must be one of ${OUTBOUND_UPLOAD_STATUSES.join(", ")}` }).optional(),
});
export type ListOutboundUploadsQuery = z.input<typeof ListOutboundUploadsQuery>;

/**
 * The workspace's outbound upload sessions, newest first, each as
 * getOutboundUpload answers it (parts, run). `status` filters on the stored
 * state, so a session past its expiry that the clean-up job has not reached
 * yet reads `expired` but is found under `initiated`.
 */
export async function listOutboundUploads(ctx: ServiceContext, opts: CallOptions & { query?: unknown }): Promise<Page<OutboundUpload>> {
  const q = parseInput(ListOutboundUploadsQuery, opts.query ?? {});
  const { outboundUploads: u, connections: c } = ctx.db.t;
  const where: SQL[] = [eq(u.workspaceId, opts.actor.workspaceId)];
  if (q.pipelineId) where.push(eq(u.pipelineId, q.pipelineId));
  if (q.connectionId) where.push(eq(u.connectionId, q.connectionId));
  if (q.status) where.push(eq(u.status, q.status));
  const filter = and(...where)!;
  const [rows, total] = await Promise.all([
    ctx.db.read.select().from(u).where(filter).orderBy(desc(u.createdAt), desc(u.id)).limit(q.limit).offset((q.page - 1) * q.limit),
    ctx.db.read.$count(u, filter),
  ]);
  const ids = [...new Set(rows.map((r) => r.connectionId))];
  const names = new Map(
    ids.length ? (await ctx.db.read.select({ id: c.id, name: c.name }).from(c).where(inArray(c.id, ids))).map((r) => [r.id, r.name] as const) : [],
  );
  const now = ctx.clock.now();
  const items = await Promise.all(rows.map(async (r) => presentUpload(r, await loadParts(ctx, r.id), now, names.get(r.connectionId) ?? null)));
  return { items, total, page: q.page, limit: q.limit };
}
