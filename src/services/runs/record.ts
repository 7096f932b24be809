import { and, eq, type SQL, sql } from "drizzle-orm";
import type { Reader } from "../../../db/client";
import type { pipelineRuns } from "../../../db/pg/schema";
import { notFound } from "../../domain/errors";
import type { RunStatus } from "../../domain/runs";
import { type ApiVersion, LATEST_VERSION, VERSION_RULES } from "../../domain/versions";
import type { ServiceContext } from "../context";
import type { PipelineRun } from "./shapes";

export type RunRow = typeof pipelineRuns.$inferSelect;

/** A run with what is current about its pipeline and connection (null once deleted). */
export interface RunRecord {
  row: RunRow;
  pipelineName: string | null;
  connectionName: string | null;
}

export const DELETED_PIPELINE = "DELETED PIPELINE";

/** Attempts of one `run.process` job before the run is given up as failed. */
export const RUN_JOB_ATTEMPTS = 5;
export const RUN_JOB = "run.process";

/**
 * The first attempt's job key is `run.process:<runId>`; a retry gets its own
 * key, because the job that failed the run may not have been marked done yet
 * when a person retries it, and a shared key would swallow the retry.
 */
export const runJobKey = (runId: string, attempt: number) => (attempt <= 1 ? `${RUN_JOB}:${runId}` : `${RUN_JOB}:${runId}:attempt-${attempt}`);

/** Runs joined with their pipeline and connection as they are now. */
export function selectRuns(ctx: ServiceContext, r: Reader = ctx.db.read) {
  const { pipelineRuns: run, pipelines: p, connections: c } = ctx.db.t;
  return r
    .select({ row: run, pipelineName: p.name, connectionName: c.name })
    .from(run)
    .leftJoin(p, eq(p.id, run.pipelineId))
    .leftJoin(c, eq(c.id, run.connectionId));
}

/** A run of the caller's workspace; any other id is a 404, whoever owns it. */
export async function loadRun(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read): Promise<RunRecord> {
  const run = ctx.db.t.pipelineRuns;
  // Outside a transaction, the statement prepared once: clients poll a run's status with this read.
  const [rec] =
    r === ctx.db.read
      ? await ctx.db.prepared("runs.byId", (q) =>
          selectRuns(ctx, q).where(and(eq(run.id, sql.placeholder("id")), eq(run.workspaceId, sql.placeholder("workspaceId")))),
        )({ id: opts.id, workspaceId: opts.workspaceId })
      : await selectRuns(ctx, r).where(and(eq(run.id, opts.id), eq(run.workspaceId, opts.workspaceId)));
  if (!rec) throw notFound("pipeline run", opts.id);
  return rec;
}

/** The run row alone, whatever the workspace (job handlers, which act for no caller). */
export async function loadRunRow(ctx: ServiceContext, id: string, r: Reader = ctx.db.read): Promise<RunRow | null> {
  const run = ctx.db.t.pipelineRuns;
  const [row] = await r.select().from(run).where(eq(run.id, id));
  return row ?? null;
}

/** Which stored statuses a status filter matches under a version (legacy `completed` includes `delivered`). */
export function statusFilter(ctx: ServiceContext, status: RunStatus, version: ApiVersion): SQL {
  const s = ctx.db.t.pipelineRuns.status;
  if (status === "completed" && !VERSION_RULES[version].hasDeliveredStatus) return sql`${s} in ('completed', 'delivered')`;
  return eq(s, status);
}

/**
 * The wire shape of a run. `delivered` arrived with 2026-05-25; an older
 * client sees an outbound run that reached its destination as `completed`,
 * the success status it knows.
 */
export function presentRun(rec: RunRecord, version: ApiVersion = LATEST_VERSION): PipelineRun {
  const r = rec.row;
  const deleted = rec.pipelineName === null;
  const status = r.status === "delivered" && !VERSION_RULES[version].hasDeliveredStatus ? "completed" : (r.status as RunStatus);
  const out: PipelineRun = {
    id: r.id,
    filename: r.filename,
    status,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    clientId: r.connectionId,
    path: r.path,
    size: r.size,
    mimetype: r.mimetype,
    metadata: r.metadata,
    pipelineDirection: r.direction as PipelineRun["pipelineDirection"],
    schemaId: r.schemaId,
    pipelineId: r.pipelineId,
    pipelineName: deleted ? DELETED_PIPELINE : rec.pipelineName!,
    isPipelineDeleted: deleted,
    client: { name: rec.connectionName ?? r.connectionName },
  };
  if (r.pipelineVersion != null) out.pipelineVersion = r.pipelineVersion;
  if (r.reprocessOf != null) out.reprocessOf = r.reprocessOf;
  if (r.errorMessage != null) out.errorMessage = r.errorMessage;
  if (r.processedAt != null) out.processedAt = r.processedAt;
  return out;
}
