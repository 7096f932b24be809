import { LocalObjectStore } from "../../adapters/storage/local";
import type { ServiceContext } from "../context";

export const STORAGE_SWEEP_JOB = "storage.sweep";
/** Hourly, off the hour. */
export const STORAGE_SWEEP_CRON = "23 * * * *";
/** Left alone this long, a temp file or multipart upload is abandoned (a link lives at most 7 days; parts touch the upload's folder). */
export const SWEEP_AFTER_MS = 24 * 3600 * 1000;

/**
 * Removes the local store's temp files and multipart uploads nobody touched
 * for a day (crashes, clients that never completed or aborted). S3 keeps
 * incomplete uploads until a bucket lifecycle rule removes them; with S3
 * this does nothing.
 */
export async function sweepLocalStorage(ctx: ServiceContext, olderThanMs = SWEEP_AFTER_MS): Promise<number> {
  if (!(ctx.storage instanceof LocalObjectStore)) return 0;
  const removed = await ctx.storage.sweep(Math.max(olderThanMs, ctx.settings.fileLinkTtlSeconds * 1000));
  if (removed > 0) ctx.log.info({ removed }, "storage sweep removed abandoned temp files and uploads");
  return removed;
}
