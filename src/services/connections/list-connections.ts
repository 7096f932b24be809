import { and, desc, eq, type SQL, sql } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { likeContains, type Page } from "../shared/shapes";
import { type ConnectionRecord, selectConnections } from "./record";
import { ListConnectionsQuery } from "./shapes";

/** Newest first. `name` matches part of the name, ignoring case. */
export async function listConnections(
  ctx: ServiceContext,
  opts: CallOptions & { query?: Record<string, unknown> },
): Promise<Page<ConnectionRecord>> {
  const q = parseInput(ListConnectionsQuery, opts.query ?? {});
  const c = ctx.db.t.connections;
  const where: SQL[] = [eq(c.workspaceId, opts.actor.workspaceId)];
  if (q.type) where.push(eq(c.type, q.type));
  if (q.name) where.push(sql`lower(${c.name}) like ${likeContains(q.name)} escape '\\'`);
  const filter = and(...where);
  const [items, total] = await Promise.all([
    selectConnections(ctx)
      .where(filter)
      .orderBy(desc(c.createdAt), desc(c.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    ctx.db.read.$count(c, filter),
  ]);
  return { items, total, page: q.page, limit: q.limit };
}
