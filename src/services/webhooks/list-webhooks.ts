import { and, desc, eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import type { WebhookRow } from "./record";
import { WebhookListQuery } from "./shapes";

/** Newest first; `kind` narrows to pipeline webhooks or automation-platform subscriptions. */
export async function listWebhooks(ctx: ServiceContext, opts: CallOptions & { query?: Record<string, unknown> }): Promise<Page<WebhookRow>> {
  const q = parseInput(WebhookListQuery, opts.query ?? {});
  const wh = ctx.db.t.webhooks;
  const filter = and(eq(wh.workspaceId, opts.actor.workspaceId), q.kind ? eq(wh.kind, q.kind) : undefined);
  const [items, total] = await Promise.all([
    ctx.db.read.select().from(wh).where(filter).orderBy(desc(wh.createdAt), desc(wh.id)).limit(q.limit).offset((q.page - 1) * q.limit),
    ctx.db.read.$count(wh, filter),
  ]);
  return { items, total, page: q.page, limit: q.limit };
}
