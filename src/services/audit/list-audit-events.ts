import { and, desc, eq, gte, isNull, lte, type SQL } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import { ListAuditEventsQuery } from "./shapes";

export type AuditEventRow = typeof import("../../../db/pg/schema").auditEvents.$inferSelect;

/** The workspace's audit records, newest first; admin keys only. */
export async function listAuditEvents(
  ctx: ServiceContext,
  opts: CallOptions & { query?: Record<string, unknown> },
): Promise<Page<AuditEventRow>> {
  if (opts.actor.role !== "admin") throw new AppError("forbidden", "the audit log can be read with an admin key only");
  const q = parseInput(ListAuditEventsQuery, opts.query ?? {});
  const a = ctx.db.t.auditEvents;
  const where: (SQL | undefined)[] = [eq(a.workspaceId, opts.actor.workspaceId)];
  if (q.resourceType) where.push(eq(a.resourceType, q.resourceType));
  if (q.resourceId) where.push(eq(a.resourceId, q.resourceId));
  if (q.action) where.push(eq(a.action, q.action));
  if (q.actor) where.push(q.actor === "cli" ? and(eq(a.actorType, "cli"), isNull(a.actorId)) : eq(a.actorId, q.actor));
  if (q.from) where.push(gte(a.createdAt, q.from));
  if (q.to) where.push(lte(a.createdAt, q.to));
  const cond = and(...where);
  const [items, total] = await Promise.all([
    ctx.db.read
      .select()
      .from(a)
      .where(cond)
      .orderBy(desc(a.createdAt), desc(a.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    ctx.db.read.$count(a, cond),
  ]);
  return { items, total, page: q.page, limit: q.limit };
}
