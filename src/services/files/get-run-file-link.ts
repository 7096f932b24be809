import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { hasProcessedFile, loadRun, type RunFile, noProcessedFile, processedFilename, processedMimetype, rejectsFilename } from "./runs";
import { type FileLink, RUN_FILE_KINDS, type RunFileKind } from "./shapes";
import { z } from "zod";

const Which = z.enum(RUN_FILE_KINDS, { error: `must be one of ${RUN_FILE_KINDS.join(", ")}` });

/**
 * A presigned GET link to a run's original, processed or rejects file,
 * valid for `settings.fileLinkTtlSeconds`. The others are named after the
 * received one (`orders.csv` -> `orders.processed.json`,
 * `orders.rejects.json`). A run without rejected rows has no rejects file:
 * 404 saying so.
 */
export async function getRunFileLink(ctx: ServiceContext, opts: CallOptions & { runId: string; which: RunFileKind }): Promise<FileLink> {
  const which = parseInput(Which, opts.which, "which");
  const run = await loadRun(ctx, { workspaceId: opts.actor.workspaceId, id: opts.runId });
  let key: string;
  let filename: string;
  let mimetype: string;
  if (which === "original") {
    key = run.originalKey;
    filename = run.filename;
    mimetype = run.mimetype || "application/octet-stream";
  } else if (which === "rejects") {
    if (!run.rejectsKey) throw noRejects(run);
    key = run.rejectsKey;
    filename = rejectsFilename(run);
    mimetype = "application/json";
  } else {
    if (!hasProcessedFile(run)) throw noProcessedFile(run);
    key = run.processedKey;
    filename = processedFilename(run);
    mimetype = processedMimetype(run);
  }
  const expiresIn = ctx.settings.fileLinkTtlSeconds;
  if (!(await ctx.storage.exists(key))) {
    throw new AppError("not_found", `the ${which} file of pipeline run '${run.id}' is no longer stored`);
  }
  const url = await ctx.storage.presign(key, { method: "GET", expiresIn, filename, contentType: mimetype });
  return { url, filename, expiresIn, mimetype };
}

function noRejects(run: RunFile): AppError {
  const why =
    run.processedAt === null
      ? `it has not been processed yet (status ${run.status})`
      : run.status === "failed"
        ? "it failed, and a failed run keeps no rows"
        : "no row was skipped or quarantined";
  return new AppError("not_found", `pipeline run '${run.id}' has no rejected rows: ${why}`);
}
