import { and, eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import { notFound } from "../../domain/errors";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import { queryRuns } from "./filters";
import type { RunRecord } from "./record";
import { ListPipelineRunsQuery } from "./shapes";

/**
 * One pipeline's runs. The pipeline may have been deleted: its runs stay
 * listed as long as there are any; an id with neither a pipeline nor runs
 * in the workspace is a 404.
 */
export async function listPipelineRuns(
  ctx: ServiceContext,
  opts: CallOptions & { pipelineId: string; query?: Record<string, unknown> },
): Promise<Page<RunRecord>> {
  const { page, limit, ...filters } = parseInput(ListPipelineRunsQuery, opts.query ?? {});
  const result = await queryRuns(ctx, { ...opts, filters: { ...filters, pipelineId: opts.pipelineId }, page, limit });
  if (result.total === 0 && !(await knownPipeline(ctx, opts.actor.workspaceId, opts.pipelineId))) {
    throw notFound("pipeline", opts.pipelineId);
  }
  return result;
}

async function knownPipeline(ctx: ServiceContext, workspaceId: string, id: string): Promise<boolean> {
  const { pipelines: p, pipelineRuns: run } = ctx.db.t;
  const [live] = await ctx.db.read.select({ id: p.id }).from(p).where(and(eq(p.id, id), eq(p.workspaceId, workspaceId)));
  if (live) return true;
  const [ran] = await ctx.db.read.select({ id: run.id }).from(run).where(and(eq(run.pipelineId, id), eq(run.workspaceId, workspaceId))).limit(1);
  return Boolean(ran);
}
