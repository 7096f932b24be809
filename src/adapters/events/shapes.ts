import { z } from "zod";
import { RUN_STATUSES } from "../../domain/runs";
import type { RunEvent as RunEventType } from "./port";

/**
 * The run event as it crosses a process boundary: NOTIFY payloads are
 * checked against it. The transports describe it with the named shape in
 * src/services/run-path/announce/watch-shapes.ts, which extends this one.
 */
export const RunEventPayload = z
  .object({
    type: z.literal("run.updated"),
    id: z.string().min(1),
    workspaceId: z.string().min(1),
    runId: z.string().min(1),
    pipelineId: z.string().min(1),
    status: z.enum(RUN_STATUSES),
    previousStatus: z.enum(RUN_STATUSES).nullable(),
    at: z.iso.datetime().describe("When the status changed."),
    missed: z
      .number()
      .int()
      .optional()
      .describe("Events this subscriber lost before this one because it read too slowly; absent when none."),
  })
  .describe("A run changed status.");

// The port's interface and this shape describe the same thing.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameShape: Same<z.output<typeof RunEventPayload>, RunEventType> = true;
void _sameShape;
