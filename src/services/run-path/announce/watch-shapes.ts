import { z } from "zod";
import { RunEventPayload } from "../../../adapters/events/shapes";
import { PipelineRun, RunStatusShape } from "../../runs/shapes";
import { Id } from "../../shared/shapes";

/** The bus's event as the transports describe it, with the run statuses' named enum. */
export const RunEvent = RunEventPayload.extend({
  status: RunStatusShape,
  previousStatus: RunStatusShape.nullable(),
}).meta({ id: "RunEvent", description: "A run changed status." });

/** What a live subscriber receives for each event. */
export const RunUpdate = z
  .object({
    event: RunEvent,
    run: PipelineRun.nullable().meta({
      description: "The run as it is when the event is delivered (it may have moved on since the event); null if it is gone.",
    }),
  })
  .meta({ id: "RunUpdate", description: "A run of the caller's workspace changed status." });
export type RunUpdate = z.output<typeof RunUpdate>;

/** One run, one pipeline's runs, or (neither given) every run of the workspace. */
export const WatchRunsQuery = z
  .strictObject({
    runId: Id.optional(),
    pipelineId: Id.optional(),
  })
  .meta({ id: "WatchRunsInput" });
export type WatchRunsQuery = z.input<typeof WatchRunsQuery>;
