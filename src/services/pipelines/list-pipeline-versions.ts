import { and, desc, eq, sql } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import { loadPipelineRow } from "./record";
import { ListPipelineVersionsQuery } from "./version-shapes";
import type { PipelineVersionRow } from "./versions";

/** A pipeline's versions, newest first; another workspace's pipeline (or a deleted one) is a 404. */
export async function listPipelineVersions(
  ctx: ServiceContext,
  opts: CallOptions & { id: string; query?: Record<string, unknown> },
): Promise<Page<PipelineVersionRow>> {
  const q = parseInput(ListPipelineVersionsQuery, opts.query ?? {});
  const workspaceId = opts.actor.workspaceId;
  await loadPipelineRow(ctx, { workspaceId, id: opts.id });
  const v = ctx.db.t.pipelineVersions;
  const filter = and(eq(v.pipelineId, opts.id), eq(v.workspaceId, workspaceId));
  const [items, [counted]] = await Promise.all([
    ctx.db.read
      .select()
      .from(v)
      .where(filter)
      .orderBy(desc(v.version))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    ctx.db.read.select({ n: sql<number>`count(*)` }).from(v).where(filter),
  ]);
  return { items, total: Number(counted?.n ?? 0), page: q.page, limit: q.limit };
}
