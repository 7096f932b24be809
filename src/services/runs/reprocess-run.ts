import { AppError } from "../../domain/errors";
import type { RunSource } from "../../domain/runs";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { loadVersion } from "../pipelines/versions";
import { pipelineForFiles } from "../run-path/ingest/pipeline-for-files";
import { loadRun, type RunRecord } from "./record";
import { ReprocessRunInput } from "./shapes";
import { ingest } from "../run-path/ingest";

/**
 * A new run from an earlier run's original file, processed under the
 * pipeline's current version or a named one (docs/decisions/pipeline-versions.md).
 * The earlier run is left as it is; the new one names it in `reprocessOf`.
 * The reprocess door: the file enters the run path through ingest(), as every file does.
 */
export async function reprocessRun(ctx: ServiceContext, opts: CallOptions & { id: string; input?: ReprocessRunInput }): Promise<RunRecord> {
  const workspaceId = opts.actor.workspaceId;
  // Another workspace's run is a 404 whatever the body says.
  const { row, pipelineName } = await loadRun(ctx, { workspaceId, id: opts.id });
  const input = parseInput(ReprocessRunInput, opts.input ?? {});
  if (pipelineName === null) {
    throw new AppError(
      "conflict",
      `pipeline '${row.pipelineId}' (${row.pipelineName}) of run '${row.id}' was deleted; a run is reprocessed by its pipeline, so there is nothing to process it with`,
    );
  }
  if (row.status === "pending" || row.status === "processing") {
    throw new AppError("conflict", `status: run '${row.id}' is ${row.status}; reprocess it once it has ended`);
  }
  // Inactive (409) or no longer of the run's direction (400): as for any file sent to it.
  const pipeline = await pipelineForFiles(ctx, { workspaceId, pipelineId: row.pipelineId, source: row.source as RunSource });
  const version = input.version ?? pipeline.version;
  if (input.version !== undefined && !(await loadVersion(ctx, { workspaceId, pipelineId: pipeline.id, version }))) {
    throw new AppError("not_found", `version: pipeline '${pipeline.name}' has no version ${version}; its versions are 1 to ${pipeline.version}`);
  }
  const body = await ctx.storage.get(row.originalKey);
  if (!body) {
    throw new AppError(
      "conflict",
      `the original file of run '${row.id}' (${row.filename}) is no longer stored (removed by retention or by hand), so it cannot be reprocessed; send the file again`,
    );
  }
  const started = ingest(ctx, {
    door: "reprocess",
    workspaceId,
    pipelineId: pipeline.id,
    filename: row.filename,
    body,
    source: row.source as RunSource,
    mimetype: row.mimetype,
    path: row.path,
    // What the sender said about the file (an e-mail's sender, an outbound upload's format) applies again.
    metadata: row.metadata.arrival as Record<string, unknown> | undefined,
    by: opts.actor,
    reprocess: { runId: row.id, version },
  });
  // A start refused before it read the file leaves the file's stream to close.
  return started.catch(async (e) => {
    await body.cancel().catch(() => {});
    throw e;
  });
}
