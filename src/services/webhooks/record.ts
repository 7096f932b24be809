import { and, eq } from "drizzle-orm";
import type { Reader } from "../../../db/client";
import type { webhooks } from "../../../db/pg/schema";
import { notFound } from "../../domain/errors";
import type { ServiceContext } from "../context";
import { RUN_EVENT_TYPES } from "../run-path/announce/run-events";
import type { Webhook, WebhookKind } from "./shapes";

export type WebhookRow = typeof webhooks.$inferSelect;

export async function loadWebhook(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read) {
  const wh = ctx.db.t.webhooks;
  const [row] = await r.select().from(wh).where(and(eq(wh.id, opts.id), eq(wh.workspaceId, opts.workspaceId)));
  if (!row) throw notFound("webhook", opts.id);
  return row;
}

/** The signing secret is never part of a read. */
export function presentWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    workspaceId: row.workspaceId,
    isActive: row.isActive,
    eventTypes: RUN_EVENT_TYPES.filter((t) => row.events.includes(t)),
    description: row.description ?? null,
    kind: row.kind as WebhookKind,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
