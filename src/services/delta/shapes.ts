import { z } from "zod";
import { Id, PageQuery } from "../shared/shapes";

export const DeltaQuery = PageQuery.extend({
  baseRunId: Id.meta({ description: "The earlier run: rows only here are `removed`." }),
  compareRunId: Id.meta({ description: "The later run of the same pipeline: rows only here are `added`." }),
});
export type DeltaQuery = z.input<typeof DeltaQuery>;

export const CHANGE_TYPES = ["added", "removed"] as const;

export const DeltaChange = z
  .object({
    type: z.enum(CHANGE_TYPES).meta({ id: "DeltaChangeType" }),
    rowIndex: z.number().int().meta({ description: "0-based row of the compare run's file (added) or the base run's file (removed)." }),
    record: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "DeltaChange" });
export type DeltaChange = z.output<typeof DeltaChange>;

export const RunDelta = z
  .object({
    baseRunId: z.string(),
    compareRunId: z.string(),
    pipelineId: z.string(),
    summary: z
      .object({
        baseCount: z.number().int().meta({ description: "Rows in the base run's processed file." }),
        compareCount: z.number().int(),
        added: z.number().int(),
        removed: z.number().int(),
        unchanged: z.number().int().meta({ description: "Rows present in both (as many times as in both)." }),
      })
      .meta({ id: "DeltaSummary" }),
    changes: z.array(DeltaChange).meta({ description: "Ordered by rowIndex; at equal rowIndex the removed row comes first." }),
    pagination: z.object({ page: z.number().int(), limit: z.number().int(), total: z.number().int(), totalPages: z.number().int() }),
  })
  .meta({ id: "RunDelta" });
export type RunDelta = z.output<typeof RunDelta>;
