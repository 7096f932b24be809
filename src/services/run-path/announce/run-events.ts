import { z } from "zod";
import type { Writer } from "../../../../db/client";
import { newId } from "../../../domain/ids";
import type { RunStatus } from "../../../domain/runs";
import type { ServiceContext } from "../../context";

/**
 * Durable run events: what webhooks and notifications are told. A run event
 * is enqueued as a `run.event` job inside the same transaction that moves the
 * run, so a committed status change always produces its event and a
 * rolled-back one never does (the live bus, live.ts, is the best-effort
 * counterpart). The job hands the event to every consumer listed in
 * announce/index.ts; each consumer enqueues its own durable sends (one per
 * webhook, one per notification recipient), so a slow receiver never holds
 * up another.
 */
export const RUN_EVENT_JOB = "run.event";

export const RUN_EVENT_TYPES = [
  "pipeline_run.completed",
  "pipeline_run.delivered",
  "pipeline_run.failed",
  "pipeline_run.acknowledged",
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

const STATUS_EVENT: Partial<Record<RunStatus, RunEventType>> = {
  completed: "pipeline_run.completed",
  delivered: "pipeline_run.delivered",
  failed: "pipeline_run.failed",
  acknowledged: "pipeline_run.acknowledged",
};

export const RunEventPayload = z.object({
  /** Stable across retries of the fan-out job: receivers de-duplicate on it (`webhook-id`). */
  eventId: z.string(),
  type: z.enum(RUN_EVENT_TYPES),
  workspaceId: z.string(),
  runId: z.string(),
  pipelineId: z.string().nullable(),
  connectionId: z.string().nullable(),
  status: z.string(),
  previousStatus: z.string().nullable(),
  /** The run's attempt when the event happened (a retried run can fail twice). */
  attempt: z.number().int(),
  at: z.string(),
});
export type RunEventPayload = z.infer<typeof RunEventPayload>;

/** Something that reacts to run events (webhooks, notifications). Must be idempotent per `eventId`. */
export type RunEventConsumer = (ctx: ServiceContext, event: RunEventPayload) => Promise<unknown>;

/**
 * Enqueues the event for a status change, inside the caller's transaction.
 * Statuses that are not events (pending, processing) enqueue nothing.
 */
export async function enqueueRunEvent(
  ctx: ServiceContext,
  w: Writer,
  run: { id: string; workspaceId: string; pipelineId: string | null; connectionId: string | null; attempt: number },
  status: RunStatus,
  previousStatus: RunStatus | null,
): Promise<void> {
  const type = STATUS_EVENT[status];
  if (!type) return;
  const payload: RunEventPayload = {
    eventId: newId("event"),
    type,
    workspaceId: run.workspaceId,
    runId: run.id,
    pipelineId: run.pipelineId,
    connectionId: run.connectionId,
    status,
    previousStatus,
    attempt: run.attempt,
    at: ctx.clock.now().toISOString(),
  };
  await ctx.queue.enqueue(w, { name: RUN_EVENT_JOB, payload, key: `${RUN_EVENT_JOB}:${payload.eventId}`, maxAttempts: 10 });
}
