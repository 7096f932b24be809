import { and, eq, max } from "drizzle-orm";
import type { Reader, Writer } from "../../../db/client";
import type { webhookDeliveries, webhookEvents } from "../../../db/pg/schema";
import { notFound } from "../../domain/errors";
import { newId } from "../../domain/ids";
import type { ServiceContext } from "../context";
import type { RunEventType } from "../run-path/announce/run-events";
import type { WebhookDelivery } from "./shapes";

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type WebhookEventRow = typeof webhookEvents.$inferSelect;

/** Bytes of a receiver's answer kept on the delivery. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export function presentDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    webhookId: row.webhookId,
    eventId: row.eventId,
    eventType: row.eventType as RunEventType,
    pipelineRunId: row.pipelineRunId,
    url: row.url,
    attempt: row.attempt,
    trigger: row.trigger as WebhookDelivery["trigger"],
    success: row.success,
    statusCode: row.statusCode,
    durationMs: row.durationMs,
    responseExcerpt: row.responseExcerpt,
    error: row.error,
    createdAt: row.createdAt,
    nextAttemptAt: row.nextAttemptAt,
  };
}

export async function loadDelivery(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read): Promise<DeliveryRow> {
  const d = ctx.db.t.webhookDeliveries;
  const [row] = await r.select().from(d).where(and(eq(d.id, opts.id), eq(d.workspaceId, opts.workspaceId)));
  if (!row) throw notFound("webhook delivery", opts.id);
  return row;
}

export async function loadEvent(ctx: ServiceContext, id: string, r: Reader = ctx.db.read): Promise<WebhookEventRow | null> {
  const e = ctx.db.t.webhookEvents;
  const [row] = await r.select().from(e).where(eq(e.id, id));
  return row ?? null;
}

export interface AttemptOutcome {
  success: boolean;
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

/**
 * Records one attempt inside the caller's transaction. Its number follows
 * the highest so far for this event and webhook; on Postgres the event row is
 * locked first, so an automatic attempt and a redelivery that end together
 * cannot take the same number (SQLite transactions are serial already).
 */
export async function recordAttempt(
  ctx: ServiceContext,
  w: Writer,
  opts: {
    event: WebhookEventRow;
    webhookId: string;
    url: string;
    trigger: "automatic" | "manual";
    outcome: AttemptOutcome;
    nextAttemptAt: Date | null;
  },
): Promise<DeliveryRow> {
  const d = ctx.db.t.webhookDeliveries;
  if (ctx.db.dialect === "pg") {
    const e = ctx.db.t.webhookEvents;
    await w.select({ id: e.id }).from(e).where(eq(e.id, opts.event.id)).for("update");
  }
  const [top] = await w
    .select({ n: max(d.attempt) })
    .from(d)
    .where(and(eq(d.webhookId, opts.webhookId), eq(d.eventId, opts.event.id)));
  const row: DeliveryRow = {
    id: newId("delivery"),
    workspaceId: opts.event.workspaceId,
    webhookId: opts.webhookId,
    eventId: opts.event.id,
    eventType: opts.event.type,
    pipelineRunId: opts.event.pipelineRunId,
    url: opts.url,
    attempt: (top?.n ?? 0) + 1,
    trigger: opts.trigger,
    success: opts.outcome.success,
    statusCode: opts.outcome.statusCode,
    durationMs: opts.outcome.durationMs,
    responseExcerpt: opts.outcome.responseExcerpt,
    error: opts.outcome.error,
    createdAt: ctx.clock.now(),
    nextAttemptAt: opts.nextAttemptAt,
  };
  await w.insert(d).values(row);
  return row;
}
