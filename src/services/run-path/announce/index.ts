import type { ServiceContext } from "../../context";
import { fanOutRunEvent as notify } from "../../notifications/fan-out";
import { fanOutRunEvent as webhooks } from "../../webhooks/fan-out";
import type { RunEventConsumer, RunEventPayload } from "./run-events";

/**
 * Announce: how the world hears that a run moved. Two channels, both fed by
 * the code that moves a run (ingest, process, and a person acknowledging it):
 *
 * - durable run events (run-events.ts): `enqueueRunEvent` inside the
 *   transaction that moves the run to completed, delivered, failed or
 *   acknowledged; the `run.event` job then hands the event to each consumer
 *   below, in order;
 * - the live bus (live.ts): `publishStatus` after every committed change,
 *   read by watchRuns (watch-runs.ts) for subscriptions.
 *
 * The consumers of run events are this list and nothing else: no module
 * registers itself when it is imported (test/architecture.test.ts). Metrics
 * hang off no event: the stage that moves a run counts it.
 */
export const RUN_EVENT_CONSUMERS: readonly { readonly name: string; readonly consume: RunEventConsumer }[] = Object.freeze([
  /** One stored body per event, one delivery chain per subscribed webhook (services/webhooks/fan-out.ts). */
  { name: "webhooks", consume: webhooks },
  /** One send per enabled preference and recipient of the run's connection (services/notifications/fan-out.ts). */
  { name: "notifications", consume: notify },
]);

/** The `run.event` job: hands the event to every consumer; a consumer that throws makes the job retry (consumers are idempotent). */
export async function dispatchRunEvent(ctx: ServiceContext, event: RunEventPayload): Promise<void> {
  const failures: string[] = [];
  for (const c of RUN_EVENT_CONSUMERS) {
    try {
      await c.consume(ctx, event);
    } catch (err) {
      ctx.log.error({ err, consumer: c.name, eventId: event.eventId, runId: event.runId }, "run event consumer failed");
      failures.push(`${c.name}: ${(err as Error).message}`);
    }
  }
  if (failures.length > 0) throw new Error(`run event ${event.eventId}: ${failures.join("; ")}`);
}

export { publishStatus } from "./live";
export { enqueueRunEvent, RUN_EVENT_JOB, RUN_EVENT_TYPES, type RunEventConsumer, RunEventPayload, type RunEventType } from "./run-events";
export { watchRuns } from "./watch-runs";
export * from "./watch-shapes";
