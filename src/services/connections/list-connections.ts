import { and, count, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import { cachedRead, readCacheSpec } from "../../../db/read-cache";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { likeContains, type Page } from "../shared/shapes";
import type { ConnectionRecord, ServerRow } from "./record";
import { ListConnectionsQuery } from "./shapes";

/**
 * The page (with the total), its customer servers and the total alone as
 * statements prepared once per filter combination (a hot read: docs/decisions/hot-path.md), the
 * filter values bound as placeholders. The servers come by an IN-subquery
 * over the same page, not a join: on SQLite a join costs more per execution
 * than the lookups it saves.
 */
function listStatements(ctx: ServiceContext, filters: { type: boolean; name: boolean }) {
  const { connections: c, sftpServers: s } = ctx.db.t;
  const where = (): SQL => {
    const parts: SQL[] = [eq(c.workspaceId, sql.placeholder("workspaceId"))];
    if (filters.type) parts.push(eq(c.type, sql.placeholder("type")));
    if (filters.name) parts.push(sql`lower(${c.name}) like ${sql.placeholder("name")} escape '\\'`);
    return and(...parts)!;
  };
  const key = `${filters.type ? "t" : ""}${filters.name ? "n" : ""}`;
  return {
    // The total rides along each row (a window count over the filtered rows): no second statement.
    page: ctx.db.prepared(`connections.page.${key}`, (r) =>
      r
        .select({ row: c, total: sql<number>`count(*) over ()`.mapWith(Number) })
        .from(c)
        .where(where())
        .orderBy(desc(c.createdAt), desc(c.id))
        .limit(sql.placeholder("limit"))
        .offset(sql.placeholder("offset")),
    ),
    servers: ctx.db.prepared(`connections.pageServers.${key}`, (r) =>
      r
        .select()
        .from(s)
        .where(
          inArray(
            s.id,
            r
              .select({ id: c.sftpServerId })
              .from(c)
              .where(where())
              .orderBy(desc(c.createdAt), desc(c.id))
              .limit(sql.placeholder("limit"))
              .offset(sql.placeholder("offset")),
          ),
        ),
    ),
    total: ctx.db.prepared(`connections.total.${key}`, (r) => r.select({ n: count() }).from(c).where(where())),
  };
}

/**
 * Pages of connections with their customer servers, by workspace and query.
 * At most 200 pages (and the default byte bound): a page holds up to
 * MAX_PAGE_SIZE connections, each presented once more for the reply.
 */
const PAGES = readCacheSpec<Page<ConnectionRecord>>("connections.page", ["connections", "sftp_servers"], { maxEntries: 200 });

/** Newest first. `name` matches part of the name, ignoring case. */
export async function listConnections(
  ctx: ServiceContext,
  opts: CallOptions & { query?: Record<string, unknown> },
): Promise<Page<ConnectionRecord>> {
  const q = parseInput(ListConnectionsQuery, opts.query ?? {});
  // A page is kept until a commit could change it (db/read-cache.ts).
  const key = JSON.stringify([opts.actor.workspaceId, q.type ?? null, q.name ?? null, q.limit, q.page]);
  return cachedRead(ctx.db.readCache(PAGES), key, () => readPage(ctx, opts.actor.workspaceId, q));
}

async function readPage(ctx: ServiceContext, workspaceId: string, q: ListConnectionsQuery): Promise<Page<ConnectionRecord>> {
  const s = listStatements(ctx, { type: Boolean(q.type), name: Boolean(q.name) });
  const values = {
    workspaceId,
    type: q.type,
    name: q.name ? likeContains(q.name) : undefined,
    limit: q.limit,
    offset: (q.page - 1) * q.limit,
  };
  const page = await s.page(values);
  const rows = page.map((p) => p.row);
  // A page past the end has no row to carry the total.
  const total = page.length > 0 ? page[0]!.total : Number((await s.total(values))[0]?.n ?? 0);
  // Hosted and e-mail connections have no server of their own: most pages need no second look.
  const servers = new Map<string, ServerRow>();
  if (rows.some((r) => r.sftpServerId !== null)) {
    for (const server of await s.servers(values)) servers.set(server.id, server);
    // A connection that changed server between the two reads: its server by id.
    const missing = rows.flatMap((r) => (r.sftpServerId !== null && !servers.has(r.sftpServerId) ? [r.sftpServerId] : []));
    if (missing.length > 0) {
      const t = ctx.db.t.sftpServers;
      for (const server of await ctx.db.read.select().from(t).where(inArray(t.id, missing))) servers.set(server.id, server);
    }
  }
  const items = rows.map((row) => ({ row, server: row.sftpServerId === null ? null : (servers.get(row.sftpServerId) ?? null) }));
  return { items, total, page: q.page, limit: q.limit };
}
