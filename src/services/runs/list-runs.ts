import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import { queryRuns } from "./filters";
import type { RunRecord } from "./record";
import { ListRunsQuery } from "./shapes";

/** Runs across the workspace's pipelines (filters: pipelineId, status, direction, clientId, connectionName/clientName, from, to). */
export function listRuns(ctx: ServiceContext, opts: CallOptions & { query?: Record<string, unknown> }): Promise<Page<RunRecord>> {
  const { page, limit, ...filters } = parseInput(ListRunsQuery, opts.query ?? {});
  return queryRuns(ctx, { ...opts, filters, page, limit });
}
