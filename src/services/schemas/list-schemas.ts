import { and, desc, eq, type SQL, sql } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { likeContains, type Page } from "../shared/shapes";
import type { SchemaRow } from "./record";
import { ListSchemasQuery } from "./shapes";

export async function listSchemas(
  ctx: ServiceContext,
  opts: CallOptions & { query?: Record<string, unknown> },
): Promise<Page<SchemaRow>> {
  const q = parseInput(ListSchemasQuery, opts.query ?? {});
  const s = ctx.db.t.schemas;
  const where: SQL[] = [eq(s.workspaceId, opts.actor.workspaceId)];
  if (q.name) where.push(sql`lower(${s.name}) like ${likeContains(q.name)} escape '\\'`);
  const filter = and(...where);
  const [items, total] = await Promise.all([
    ctx.db.read
      .select()
      .from(s)
      .where(filter)
      .orderBy(desc(s.createdAt), desc(s.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    ctx.db.read.$count(s, filter),
  ]);
  return { items, total, page: q.page, limit: q.limit };
}
