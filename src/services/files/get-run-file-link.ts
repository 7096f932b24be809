import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { hasProcessedFile, loadRun, noProcessedFile, processedFilename, processedMimetype } from "./runs";
import { type FileLink, RUN_FILE_KINDS, type RunFileKind } from "./shapes";
import { z } from "zod";

const Which = z.enum(RUN_FILE_KINDS, { error: `must be one of ${RUN_FILE_KINDS.join(", ")}` });

/**
 * A presigned GET link to a run's original or processed file, valid for
 * `settings.fileLinkTtlSeconds`. The processed file is named after the
 * received one (`orders.csv` -> `orders.processed.json`).
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
