import { and, eq } from "drizzle-orm";
import type { NotifyChannel } from "../../adapters/notify/port";
import { newId } from "../../domain/ids";
import type { RowError, RunCounts } from "../../domain/runs";
import type { ServiceContext } from "../context";
import type { RunEventPayload } from "../run-path/announce/run-events";
import { DELETED_PIPELINE, selectRuns } from "../runs/record";
import { enabledPreferences } from "./preferences";
import type { SendRow } from "./record";
import { NOTIFY_SEND_JOB, SEND_ATTEMPTS, sendJobKey } from "./send";
import type { NotificationEventType } from "./shapes";
import { type RunFacts, render } from "./templates";

/**
 * Which notification event a run event is: a failure, or a success (an
 * inbound run that completed, an outbound run that was delivered). An
 * acknowledgement notifies nobody.
 */
export function notificationEventOf(event: Pick<RunEventPayload, "type">, direction: string): NotificationEventType | null {
  switch (event.type) {
    case "pipeline_run.failed":
      return "PIPELINE_RUN_FAILED";
    case "pipeline_run.completed":
      // An outbound run's success is its delivery; `completed` would come before it.
      return direction === "outbound" ? null : "PIPELINE_RUN_SUCCEEDED";
    case "pipeline_run.delivered":
      return "PIPELINE_RUN_SUCCEEDED";
    default:
      return null;
  }
}

/** The run as a message tells it: names as they are now (as they were at the run, once deleted). */
async function runFacts(ctx: ServiceContext, event: RunEventPayload, eventType: NotificationEventType): Promise<RunFacts | null> {
  const run = ctx.db.t.pipelineRuns;
  const [rec] = await selectRuns(ctx).where(and(eq(run.id, event.runId), eq(run.workspaceId, event.workspaceId)));
  if (!rec) return null;
  const r = rec.row;
  const errors = Array.isArray(r.metadata.errors) ? (r.metadata.errors as RowError[]) : [];
  return {
    eventType,
    runId: r.id,
    status: event.status,
    pipelineId: r.pipelineId,
    pipelineName: rec.pipelineName ?? `${r.pipelineName} (${DELETED_PIPELINE})`,
    connectionId: r.connectionId,
    connectionName: rec.connectionName ?? r.connectionName,
    filename: r.filename,
    size: r.size,
    direction: r.direction,
    rows: (r.metadata.rows as RunCounts | undefined) ?? null,
    errors,
    errorMessage: eventType === "PIPELINE_RUN_FAILED" ? (r.errorMessage ?? null) : null,
    at: event.at,
    url: `${ctx.settings.publicUrl}/pipeline-runs/${r.id}`,
  };
}

/**
 * The `notifications` consumer of run events: one send per enabled
 * preference of the run's connection for the event type, and per recipient,
 * each recorded and queued as its own durable job in one transaction. The
 * record's unique (event, preference, recipient) makes a second delivery of
 * the same event (the fan-out job retried) add nothing.
 */
export async function fanOutRunEvent(ctx: ServiceContext, event: RunEventPayload): Promise<number> {
  if (!event.connectionId || event.type === "pipeline_run.acknowledged") return 0;
  // Cheap first question (the run's direction matters only for `completed`): does anyone want to hear about it?
  const eventType = notificationEventOf(event, "inbound");
  if (!eventType) return 0;
  const prefs = await enabledPreferences(ctx, { workspaceId: event.workspaceId, connectionId: event.connectionId, eventType });
  if (prefs.length === 0) return 0;
  const facts = await runFacts(ctx, event, eventType);
  if (!facts || notificationEventOf(event, facts.direction) !== eventType) return 0;

  const messages = new Map<NotifyChannel, ReturnType<typeof render>>();
  const now = ctx.clock.now();
  const rows: SendRow[] = [];
  for (const p of prefs) {
    const channel = p.channel as NotifyChannel;
    if (!messages.has(channel)) messages.set(channel, render(channel, facts));
    for (const recipient of p.recipients) {
      rows.push({
        id: newId("notificationSend"),
        workspaceId: event.workspaceId,
        connectionId: event.connectionId,
        preferenceId: p.id,
        eventId: event.eventId,
        eventType,
        runId: event.runId,
        channel,
        recipient,
        status: "pending",
        attempts: 0,
        error: null,
        providerId: null,
        message: messages.get(channel)!,
        sentAt: null,
        createdAt: now,
        updatedAt: now,
      });
    }
  }
  if (rows.length === 0) return 0;
  const s = ctx.db.t.notificationSends;
  return ctx.db.tx(async (w) => {
    const inserted = await w.insert(s).values(rows).onConflictDoNothing().returning({ id: s.id });
    for (const { id } of inserted) {
      await ctx.queue.enqueue(w, { name: NOTIFY_SEND_JOB, payload: { sendId: id }, key: sendJobKey(id), maxAttempts: SEND_ATTEMPTS });
    }
    return inserted.length;
  });
}
