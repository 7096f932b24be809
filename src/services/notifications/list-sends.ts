import { and, desc, eq, type SQL } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import type { SendRow } from "./record";
import { ListSendsQuery } from "./shapes";

/** The workspace's notification sends, newest first; filters: clientId, runId, status, channel, eventType. */
export async function listNotificationSends(ctx: ServiceContext, opts: CallOptions & { query?: Record<string, unknown> }): Promise<Page<SendRow>> {
  const q = parseInput(ListSendsQuery, opts.query ?? {});
  const s = ctx.db.t.notificationSends;
  const where: SQL[] = [eq(s.workspaceId, opts.actor.workspaceId)];
  if (q.clientId) where.push(eq(s.connectionId, q.clientId));
  if (q.runId) where.push(eq(s.runId, q.runId));
  if (q.status) where.push(eq(s.status, q.status));
  if (q.channel) where.push(eq(s.channel, q.channel));
  if (q.eventType) where.push(eq(s.eventType, q.eventType));
  const filter = and(...where)!;
  const [items, total] = await Promise.all([
    ctx.db.read.select().from(s).where(filter).orderBy(desc(s.createdAt), desc(s.id)).limit(q.limit).offset((q.page - 1) * q.limit),
    ctx.db.read.$count(s, filter),
  ]);
  return { items, total, page: q.page, limit: q.limit };
}
