import { lt } from "drizzle-orm";
import type { ServiceContext } from "../context";

export const AUDIT_PURGE_JOB = "audit.purge";
/** Daily, at 03:17 UTC. */
export const AUDIT_PURGE_CRON = "17 3 * * *";

/** Deletes audit records older than AUDIT_RETENTION_DAYS: the only delete the table sees. */
export async function purgeAuditEvents(ctx: ServiceContext): Promise<number> {
  const a = ctx.db.t.auditEvents;
  const before = new Date(ctx.clock.now().getTime() - ctx.settings.auditRetentionDays * 86_400_000);
  const gone = await ctx.db.tx((w) => w.delete(a).where(lt(a.createdAt, before)).returning({ id: a.id }), { quiet: true });
  if (gone.length > 0) ctx.log.info({ deleted: gone.length, before }, "audit records past retention deleted");
  return gone.length;
}
