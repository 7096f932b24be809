import { LocalObjectStore } from "../../adapters/storage/local";
import type { ServiceContext } from "../context";

export const STORAGE_SWEEP_JOB = "storage.sweep";
/** Hourly, off the hour. */
export const STORAGE_SWEEP_CRON = "23 * * * *";
/** Left alone this long, a multipart upload is abandoned (a link lives at most 7 days; parts touch the upload's folder). */
export const SWEEP_AFTER_MS = 24 * 3600 * 1000;
/**
 * A temp file not written to for this long belongs to no live write: every
 * write appends to it as bytes arrive, and a connection that sends nothing
 * is closed long before (HTTP_IDLE_TIMEOUT_SECONDS is at most 255 s).
 */
export const TEMP_AFTER_MS = 3600 * 1000;

/**
 * Removes the local store's multipart uploads nobody touched for a day
 * (clients that never completed or aborted) and temp files nobody wrote to
 * for an hour (writes a crash interrupted). S3 keeps
 * incomplete uploads until a bucket lifecycle rule removes them; with S3
 * this does nothing.
 */
export async function sweepLocalStorage(ctx: ServiceContext, olderThanMs = SWEEP_AFTER_MS): Promise<number> {
  if (!(ctx.storage instanceof LocalObjectStore)) return 0;
  const removed = await ctx.storage.sweep(Math.max(olderThanMs, ctx.settings.fileLinkTtlSeconds * 1000), Math.min(olderThanMs, TEMP_AFTER_MS));
  if (removed > 0) ctx.log.info({ removed }, "storage sweep removed abandoned temp files and uploads");
  return removed;
}
