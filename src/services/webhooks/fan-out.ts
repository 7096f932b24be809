import { and, eq, inArray, or } from "drizzle-orm";
import { LATEST_VERSION } from "../../domain/versions";
import type { ServiceContext } from "../context";
import type { RunEventPayload } from "../run-path/announce/run-events";
import { presentRun, selectRuns } from "../runs/record";
import type { WebhookEventRow } from "./deliveries";
import { deliveryJob } from "./deliver";
import type { WebhookRow } from "./record";

/**
 * The body every webhook gets for a run event. `data.run` is the run as the
 * latest API version shows it, read when the event is fanned out (a moment
 * after the change); `data.status` is the status the event is about.
 */
export function eventBody(event: RunEventPayload, run: unknown): string {
  return JSON.stringify({
    id: event.eventId,
    type: event.type,
    timestamp: event.at,
    workspaceId: event.workspaceId,
    data: { status: event.status, previousStatus: event.previousStatus, runAttempt: event.attempt, run },
  });
}

/**
 * Who gets an event: every active webhook linked to the run's pipeline and
 * every active workspace-level PIPELINE_RUN_EVENT hook of the workspace,
 * each only for the event types it subscribes to.
 */
export async function recipientsOf(ctx: ServiceContext, event: RunEventPayload): Promise<WebhookRow[]> {
  const { webhooks: wh, pipelineWebhooks: pw } = ctx.db.t;
  const linked = event.pipelineId
    ? ctx.db.read
        .select({ id: pw.webhookId })
        .from(pw)
        .where(eq(pw.pipelineId, event.pipelineId))
        .then((rows) => rows.map((r) => r.id))
    : Promise.resolve([] as string[]);
  const ids = await linked;
  const rows = await ctx.db.read
    .select()
    .from(wh)
    .where(
      and(
        eq(wh.workspaceId, event.workspaceId),
        eq(wh.isActive, true),
        ids.length > 0 ? or(eq(wh.kind, "PIPELINE_RUN_EVENT"), inArray(wh.id, ids)) : eq(wh.kind, "PIPELINE_RUN_EVENT"),
      ),
    );
  return rows.filter((r) => r.events.includes(event.type) && (r.kind === "PIPELINE_RUN_EVENT" || ids.includes(r.id)));
}

/**
 * The `webhooks` run-event consumer: stores the event's body once and
 * enqueues the job of its first attempts (every recipient; each failure
 * then continues as its own chain of retries), in one transaction. The
 * stored event doubles as the mark that the fan-out happened, so a retried
 * `run.event` job (another consumer failed) starts no second chain.
 */
export async function fanOutRunEvent(ctx: ServiceContext, event: RunEventPayload): Promise<void> {
  const recipients = await recipientsOf(ctx, event);
  if (recipients.length === 0) return;
  const e = ctx.db.t.webhookEvents;
  const [done] = await ctx.db.read.select({ id: e.id }).from(e).where(eq(e.id, event.eventId));
  if (done) return;
  const run = ctx.db.t.pipelineRuns;
  const [rec] = await selectRuns(ctx).where(eq(run.id, event.runId));
  if (!rec) {
    ctx.log.warn({ eventId: event.eventId, runId: event.runId }, "run event for a run that no longer exists; no webhook is told");
    return;
  }
  const row: WebhookEventRow = {
    id: event.eventId,
    workspaceId: event.workspaceId,
    type: event.type,
    pipelineRunId: event.runId,
    body: eventBody(event, presentRun(rec, LATEST_VERSION)),
    createdAt: ctx.clock.now(),
  };
  await ctx.db.tx(async (w) => {
    const inserted = await w.insert(e).values(row).onConflictDoNothing().returning({ id: e.id });
    if (inserted.length === 0) return;
    await ctx.queue.enqueue(w, deliveryJob({ eventId: event.eventId, webhookIds: recipients.map((h) => h.id), step: 1 }));
  });
}
