import { and, desc, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import { LATEST_VERSION } from "../../domain/versions";
import type { CallOptions, ServiceContext } from "../context";
import { likeContains, type Page } from "../shared/shapes";
import { type RunRecord, selectRuns, statusFilter } from "./record";
import type { ListRunsQuery } from "./shapes";

type Filters = Omit<import("zod").output<typeof ListRunsQuery>, "page" | "limit">;

/**
 * The run lists' shared query: the workspace's runs matching the filters,
 * newest first (creation time, then id). `connectionName` matches the
 * connection's current name, or the name kept on the run once the
 * connection is gone.
 */
export async function queryRuns(
  ctx: ServiceContext,
  opts: CallOptions & { filters: Filters; page: number; limit: number },
): Promise<Page<RunRecord>> {
  const { pipelineRuns: run, pipelines: p, connections: c } = ctx.db.t;
  const f = opts.filters;
  const where: SQL[] = [eq(run.workspaceId, opts.actor.workspaceId)];
  if (f.pipelineId) where.push(eq(run.pipelineId, f.pipelineId));
  if (f.status) where.push(statusFilter(ctx, f.status, opts.version ?? LATEST_VERSION));
  if (f.direction) where.push(eq(run.direction, f.direction));
  if (f.clientId) where.push(eq(run.connectionId, f.clientId));
  const connectionName = f.connectionName ?? f.clientName;
  if (connectionName) {
    where.push(sql`lower(coalesce(${c.name}, ${run.connectionName})) like ${likeContains(connectionName)} escape '\\'`);
  }
  if (f.from) where.push(gte(run.createdAt, f.from));
  if (f.to) where.push(lte(run.createdAt, f.to));
  const filter = and(...where);
  const [items, [counted]] = await Promise.all([
    selectRuns(ctx)
      .where(filter)
      .orderBy(desc(run.createdAt), desc(run.id))
      .limit(opts.limit)
      .offset((opts.page - 1) * opts.limit),
    ctx.db.read
      .select({ n: sql<number>`count(*)` })
      .from(run)
      .leftJoin(p, eq(p.id, run.pipelineId))
      .leftJoin(c, eq(c.id, run.connectionId))
      .where(filter),
  ]);
  return { items, total: Number(counted?.n ?? 0), page: opts.page, limit: opts.limit };
}
