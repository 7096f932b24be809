import { and, eq, inArray, lte } from "drizzle-orm";
import type { ServiceContext } from "../context";
import { purgeParts } from "./complete-upload";
import { partsPrefix } from "./record";

/** The cron job that expires sessions (src/jobs/definitions.ts). */
export const OUTBOUND_EXPIRE_JOB = "outbound.expire";
/** Every five minutes: a session is expired at most five minutes after its expiresAt (it reads as expired at once anyway). */
export const OUTBOUND_EXPIRE_CRON = "*/5 * * * *";
/** Ended sessions (and their part rows) are deleted this long after their expiresAt. */
export const ENDED_RETENTION_MS = 30 * 24 * 3600 * 1000;
const BATCH = 100;

/**
 * Marks `initiated` sessions past their expiresAt `expired` and deletes
 * their parts' objects (the part rows stay, as a record of what had
 * arrived). Sessions that ended more than ENDED_RETENTION_MS after their
 * expiresAt are deleted with their part rows, and their parts prefix is
 * deleted once more, which also removes parts a failed clean-up left.
 * Idempotent; each session moves once (a guarded update), so two instances
 * running it at once do the work once.
 */
export async function expireOutboundUploads(ctx: ServiceContext): Promise<{ expired: number; deleted: number }> {
  const u = ctx.db.t.outboundUploads;
  const now = ctx.clock.now();
  let expired = 0;
  for (;;) {
    const due = await ctx.db.read
      .select({ id: u.id, workspaceId: u.workspaceId, expiresAt: u.expiresAt })
      .from(u)
      .where(and(eq(u.status, "initiated"), lte(u.expiresAt, now)))
      .limit(BATCH);
    for (const s of due) {
      const moved = await ctx.db.tx((w) =>
        w
          .update(u)
          .set({
            status: "expired",
            errorMessage: `not completed before it expired at ${s.expiresAt.toISOString()}`,
            endedAt: now,
            updatedAt: now,
          })
          .where(and(eq(u.id, s.id), eq(u.status, "initiated")))
          .returning({ id: u.id }),
      );
      if (moved.length === 0) continue;
      expired++;
      await purgeParts(ctx, s);
    }
    if (due.length < BATCH) break;
  }

  let deleted = 0;
  const cutoff = new Date(now.getTime() - ENDED_RETENTION_MS);
  for (;;) {
    const old = await ctx.db.read
      .select({ id: u.id, workspaceId: u.workspaceId })
      .from(u)
      .where(and(inArray(u.status, ["completed", "failed", "expired"]), lte(u.expiresAt, cutoff)))
      .limit(BATCH);
    for (const s of old) {
      await ctx.storage.deletePrefix(partsPrefix(s.workspaceId, s.id));
      await ctx.db.tx((w) => w.delete(u).where(eq(u.id, s.id)));
      deleted++;
    }
    if (old.length < BATCH) break;
  }
  if (expired + deleted > 0) ctx.log.info({ expired, deleted }, "outbound uploads expired and cleaned up");
  return { expired, deleted };
}
