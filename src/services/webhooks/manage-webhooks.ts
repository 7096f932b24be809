import { desc, eq } from "drizzle-orm";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { type Page, PageQuery } from "../shared/shapes";
import { loadWebhook, type WebhookRow } from "./record";
import { UpdateWebhookInput, WEBHOOK_READ_ONLY } from "./shapes";

export function getWebhook(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<WebhookRow> {
  return loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}

export async function listWebhooks(ctx: ServiceContext, opts: CallOptions & { query?: Record<string, unknown> }): Promise<Page<WebhookRow>> {
  const page = parseInput(PageQuery, opts.query ?? {});
  const wh = ctx.db.t.webhooks;
  const filter = eq(wh.workspaceId, opts.actor.workspaceId);
  const [items, total] = await Promise.all([
    ctx.db.read.select().from(wh).where(filter).orderBy(desc(wh.createdAt), desc(wh.id)).limit(page.limit).offset((page.page - 1) * page.limit),
    ctx.db.read.$count(wh, filter),
  ]);
  return { items, total, page: page.page, limit: page.limit };
}

export async function updateWebhook(ctx: ServiceContext, opts: CallOptions & { id: string; input: UpdateWebhookInput }): Promise<WebhookRow> {
  const input = parseInput(UpdateWebhookInput, withoutReadOnly(opts.input, WEBHOOK_READ_ONLY));
  const wh = ctx.db.t.webhooks;
  return ctx.db.tx(async (w) => {
    const cur = await loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    const next: WebhookRow = {
      ...cur,
      name: input.name ?? cur.name,
      url: input.url ?? cur.url,
      isActive: input.isActive ?? cur.isActive,
      updatedAt: ctx.clock.now(),
    };
    await w.update(wh).set(next).where(eq(wh.id, cur.id));
    return next;
  });
}

/** Unlinks the webhook from every pipeline, then deletes it. */
export async function deleteWebhook(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<{ id: string; deleted: true }> {
  const { webhooks: wh, pipelineWebhooks: pw } = ctx.db.t;
  return ctx.db.tx(async (w) => {
    await loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    await w.delete(pw).where(eq(pw.webhookId, opts.id));
    await w.delete(wh).where(eq(wh.id, opts.id));
    return { id: opts.id, deleted: true as const };
  });
}
