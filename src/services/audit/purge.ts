import { inArray, lt } from "drizzle-orm";
import type { ServiceContext } from "../context";

export const AUDIT_PURGE_JOB = "audit.purge";
/** Daily, at 03:17 UTC. */
export const AUDIT_PURGE_CRON = "17 3 * * *";
/**
 * Records deleted per transaction: a long backlog is deleted in short
 * statements, each well inside the database's stall bound
 * (DATABASE_STALL_TIMEOUT_SECONDS), and never holds the table for long.
 */
export const AUDIT_PURGE_BATCH = 5_000;

/** Deletes audit records older than AUDIT_RETENTION_DAYS: the only delete the table sees. */
export async function purgeAuditEvents(ctx: ServiceContext, batch = AUDIT_PURGE_BATCH): Promise<number> {
  const a = ctx.db.t.auditEvents;
  const before = new Date(ctx.clock.now().getTime() - ctx.settings.auditRetentionDays * 86_400_000);
  let deleted = 0;
  for (;;) {
    const gone = await ctx.db.tx(
      (w) => w.delete(a).where(inArray(a.id, w.select({ id: a.id }).from(a).where(lt(a.createdAt, before)).limit(batch))).returning({ id: a.id }),
      { quiet: true },
    );
    deleted += gone.length;
    if (gone.length < batch) break;
  }
  if (deleted > 0) ctx.log.info({ deleted, before }, "audit records past retention deleted");
  return deleted;
}
