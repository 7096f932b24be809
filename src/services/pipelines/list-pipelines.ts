import { and, desc, eq, type SQL, sql } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { likeContains, type Page } from "../shared/shapes";
import { type PipelineRecord, withWebhooks } from "./record";
import { ListPipelinesQuery } from "./shapes";

/**
 * Filters: `clientId` (or `connectionId`), `connectionName` (part of the
 * connection's name, ignoring case; `clientName` is its deprecated alias),
 * `direction`, `isActive`. Newest first.
 */
export async function listPipelines(
  ctx: ServiceContext,
  opts: CallOptions & { query?: Record<string, unknown> },
): Promise<Page<PipelineRecord>> {
  const q = parseInput(ListPipelinesQuery, opts.query ?? {});
  if (q.clientId && q.connectionId && q.clientId !== q.connectionId) {
    throw new AppError("invalid_input", "connectionId: differs from clientId; send one of them");
  }
  const { pipelines: p, connections: c } = ctx.db.t;
  const where: SQL[] = [eq(p.workspaceId, opts.actor.workspaceId)];
  const connectionId = q.clientId ?? q.connectionId;
  if (connectionId) where.push(eq(p.connectionId, connectionId));
  const connectionName = q.connectionName ?? q.clientName;
  if (connectionName) where.push(sql`lower(${c.name}) like ${likeContains(connectionName)} escape '\\'`);
  if (q.direction) where.push(eq(p.direction, q.direction));
  if (q.isActive !== undefined) where.push(eq(p.isActive, q.isActive));
  const filter = and(...where);
  const [rows, [counted]] = await Promise.all([
    ctx.db.read
      .select({ row: p })
      .from(p)
      .innerJoin(c, eq(c.id, p.connectionId))
      .where(filter)
      .orderBy(desc(p.createdAt), desc(p.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    ctx.db.read.select({ n: sql<number>`count(*)` }).from(p).innerJoin(c, eq(c.id, p.connectionId)).where(filter),
  ]);
  const items = await withWebhooks(
    ctx,
    rows.map((r) => r.row),
  );
  return { items, total: Number(counted?.n ?? 0), page: q.page, limit: q.limit };
}
