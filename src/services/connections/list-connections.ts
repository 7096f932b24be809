import { and, count, desc, eq, type SQL, sql } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { likeContains, type Page } from "../shared/shapes";
import { type ConnectionRecord, selectConnections } from "./record";
import { ListConnectionsQuery } from "./shapes";

/**
 * The page and the total as statements prepared once per filter combination
 * (a hot read: docs/decisions/hot-path.md), the filter values bound as
 * placeholders.
 */
function listStatements(ctx: ServiceContext, filters: { type: boolean; name: boolean }) {
  const c = ctx.db.t.connections;
  const where = (): SQL => {
    const parts: SQL[] = [eq(c.workspaceId, sql.placeholder("workspaceId"))];
    if (filters.type) parts.push(eq(c.type, sql.placeholder("type")));
    if (filters.name) parts.push(sql`lower(${c.name}) like ${sql.placeholder("name")} escape '\\'`);
    return and(...parts)!;
  };
  const key = `${filters.type ? "t" : ""}${filters.name ? "n" : ""}`;
  return {
    page: ctx.db.prepared(`connections.page.${key}`, (r) =>
      selectConnections(ctx, r)
        .where(where())
        .orderBy(desc(c.createdAt), desc(c.id))
        .limit(sql.placeholder("limit"))
        .offset(sql.placeholder("offset")),
    ),
    total: ctx.db.prepared(`connections.total.${key}`, (r) => r.select({ n: count() }).from(c).where(where())),
  };
}

/** Newest first. `name` matches part of the name, ignoring case. */
export async function listConnections(
  ctx: ServiceContext,
  opts: CallOptions & { query?: Record<string, unknown> },
): Promise<Page<ConnectionRecord>> {
  const q = parseInput(ListConnectionsQuery, opts.query ?? {});
  const s = listStatements(ctx, { type: Boolean(q.type), name: Boolean(q.name) });
  const values = {
    workspaceId: opts.actor.workspaceId,
    type: q.type,
    name: q.name ? likeContains(q.name) : undefined,
    limit: q.limit,
    offset: (q.page - 1) * q.limit,
  };
  const [items, [total]] = await Promise.all([s.page(values), s.total(values)]);
  return { items, total: Number(total?.n ?? 0), page: q.page, limit: q.limit };
}
