import { z } from "zod";
import { RUN_STATUSES } from "../../domain/runs";
import { DIRECTIONS } from "../pipelines/shapes";
import { Id, PageQuery } from "../shared/shapes";

export const RunStatusShape = z
  .enum(RUN_STATUSES, { error: `must be one of ${RUN_STATUSES.join(", ")}` })
  .meta({ id: "PipelineRunStatus" });

const DirectionFilter = z.enum(DIRECTIONS, { error: `must be one of ${DIRECTIONS.join(", ")}` });

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A point in time in a query string: an ISO 8601 date-time, or a date alone
 * (midnight UTC). `end` makes a date alone mean the end of that day, so that
 * `to=2026-05-31` includes the 31st.
 */
export const QueryTime = (end: boolean) =>
  z
    .string()
    .max(40, "must be an ISO 8601 date or date-time")
    .refine((s) => DATE_ONLY.test(s) || z.iso.datetime({ offset: true }).safeParse(s).success, "must be an ISO 8601 date or date-time")
    .transform((s) => {
      const d = new Date(DATE_ONLY.test(s) ? `${s}T00:00:00.000Z` : s);
      return end && DATE_ONLY.test(s) ? new Date(d.getTime() + 86_400_000 - 1) : d;
    })
    .refine((d) => !Number.isNaN(d.getTime()), "must be a valid date");

/** Filters shared by both run lists. */
const RunFilters = {
  status: RunStatusShape.optional(),
  direction: DirectionFilter.optional().meta({ description: "The pipeline's direction when the run started." }),
  clientId: Id.optional().meta({ description: "The originating connection." }),
  connectionName: z.string().max(200).optional().meta({ description: "Part of the originating connection's name, any case." }),
  clientName: z.string().max(200).optional().meta({ deprecated: true, description: "Alias of connectionName." }),
  from: QueryTime(false).optional().meta({ description: "Runs created at or after (ISO 8601 date or date-time)." }),
  to: QueryTime(true).optional().meta({ description: "Runs created at or before; a date alone covers that whole day." }),
};

const checkRange = (q: { from?: Date; to?: Date }, ctx: z.core.$RefinementCtx) => {
  if (q.from && q.to && q.from.getTime() > q.to.getTime()) ctx.addIssue({ code: "custom", path: ["to"], message: "must not be before from" });
};

/** `GET /pipeline-runs`: runs across the workspace's pipelines, newest first. */
export const ListRunsQuery = PageQuery.extend({ pipelineId: Id.optional(), ...RunFilters }).superRefine(checkRange);
export type ListRunsQuery = z.input<typeof ListRunsQuery>;

/** `GET /pipeline-runs/pipeline/{pipelineId}`: one pipeline's runs, newest first. */
export const ListPipelineRunsQuery = PageQuery.extend(RunFilters).superRefine(checkRange);
export type ListPipelineRunsQuery = z.input<typeof ListPipelineRunsQuery>;

/** The spec allows one value only. */
export const AcknowledgeRunInput = z
  .strictObject({
    status: z.literal("acknowledged", {
      error: (i) => (i.input === undefined ? "is required" : "must be 'acknowledged', the only status a client may set"),
    }),
  })
  .meta({ id: "AcknowledgeRunInput" });
export type AcknowledgeRunInput = z.input<typeof AcknowledgeRunInput>;

export const RunClient = z.object({ name: z.string() }).meta({ id: "PipelineRunClient" });

export const PipelineRun = z
  .object({
    id: z.string(),
    filename: z.string(),
    status: RunStatusShape.meta({
      description: "Version 2024-09-01 reports an outbound run that reached its destination as `completed` (`delivered` came with 2026-05-25).",
    }),
    createdAt: z.date(),
    updatedAt: z.date(),
    clientId: z.string().meta({ description: "The originating connection." }),
    path: z.string().meta({ description: "Where the file came from: the remote path (SFTP), else the original's object key." }),
    size: z.number().int().meta({ description: "Bytes of the original file." }),
    mimetype: z.string(),
    metadata: z.record(z.string(), z.unknown()).meta({
      description: "rows {total, valid, invalid, skipped, quarantined} (total = valid + skipped + quarantined), errors (first invalid rows: inputRow, field, message), input (with header: unusedColumns, missingColumns, matchedColumns), output, rejects {size, rows}, timings (ms; whileArriving when processing began as the file arrived), attempts.",
    }),
    pipelineDirection: z.enum(DIRECTIONS),
    errorMessage: z.string().optional().meta({ description: "Present when the run failed." }),
    processedAt: z.date().optional().meta({ description: "Present once processing ended." }),
    schemaId: z.string(),
    pipelineVersion: z.number().int().optional().meta({
      description: "The pipeline version the run was processed with (GET /pipelines/{id}/versions); present once processed, or from the start when a reprocess named it.",
    }),
    reprocessOf: z.string().optional().meta({ description: "The run whose original file this run reprocesses (POST /pipeline-runs/{id}/reprocess)." }),
    pipelineId: z.string(),
    pipelineName: z.string().meta({ description: "`DELETED PIPELINE` once the pipeline is deleted." }),
    isPipelineDeleted: z.boolean(),
    client: RunClient.meta({ description: "The originating connection's current name (the name at the time of the run once it is deleted)." }),
  })
  .meta({ id: "PipelineRun" });
export type PipelineRun = z.output<typeof PipelineRun>;

/** `POST /pipeline-runs/{id}/reprocess`: the version to process under; the pipeline's current one when left out. */
export const ReprocessRunInput = z
  .strictObject({
    version: z
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(1, "must be at least 1")
      .optional()
      .meta({ description: "A version of the run's pipeline (GET /pipelines/{id}/versions); default the current one." }),
  })
  .meta({ id: "ReprocessRunInput" });
export type ReprocessRunInput = z.input<typeof ReprocessRunInput>;

/** The job payload of `run.process`; checked on every claim, since jobs outlive the code that enqueued them. */
export const ProcessRunPayload = z.object({
  runId: Id,
  /** The attempt the job was enqueued for; a job left over from an earlier attempt does nothing. */
  attempt: z.number().int().min(1).optional(),
});
export type ProcessRunPayload = z.output<typeof ProcessRunPayload>;
