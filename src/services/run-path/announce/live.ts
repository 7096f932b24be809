import type { RunEvent } from "../../../adapters/events/port";
import { newId } from "../../../domain/ids";
import type { RunStatus } from "../../../domain/runs";
import type { ServiceContext } from "../../context";
import type { RunRow } from "../../runs/record";

/**
 * The live channel of announce: every status change (pending and processing
 * included, and a processing run's progress) goes on the event bus
 * (`ctx.events`: in memory, or LISTEN/NOTIFY across instances), where
 * watchRuns hands it to the caller's subscriptions (GraphQL, tRPC, the
 * dashboard). Best effort, unlike the durable run events (run-events.ts).
 */
/**
 * Tells subscribers a run moved. Called after the change is committed; a
 * bus that cannot take the event costs a live update, never the run.
 */
export async function publishStatus(
  ctx: ServiceContext,
  row: Pick<RunRow, "id" | "workspaceId" | "pipelineId">,
  status: RunStatus,
  previousStatus: RunStatus | null,
): Promise<void> {
  const event: RunEvent = {
    type: "run.updated",
    id: newId("event"),
    workspaceId: row.workspaceId,
    runId: row.id,
    pipelineId: row.pipelineId,
    status,
    previousStatus,
    at: ctx.clock.now().toISOString(),
  };
  try {
    await ctx.events.publish(event);
  } catch (err) {
    ctx.log.warn({ err, runId: row.id, status }, "run event not published");
  }
}
