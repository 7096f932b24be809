import { z } from "zod";
import { SampleInput } from "../shared/sample";
import { Id } from "../shared/shapes";
import { PipelineMappings } from "./shapes";

/** Rows a preview returns in full at most (the counts cover the whole sample). */
export const MAX_PREVIEW_ROWS = 1000;
export const DEFAULT_PREVIEW_ROWS = 100;

/** What may be tried instead of the saved pipeline: nothing of it is stored. */
export const PreviewPipelineInput = z
  .strictObject({
    mappings: PipelineMappings.optional().meta({ description: "Unsaved mappings to try instead of the pipeline's (checked as on save)." }),
    schemaId: Id.optional().meta({ description: "A schema of the workspace to validate against instead of the pipeline's." }),
    limit: z.coerce
      .number({ error: "must be a whole number" })
      .int("must be a whole number")
      .min(1, "must be at least 1")
      .max(MAX_PREVIEW_ROWS, `must be at most ${MAX_PREVIEW_ROWS}`)
      .default(DEFAULT_PREVIEW_ROWS)
      .meta({ description: `Rows returned in full (default ${DEFAULT_PREVIEW_ROWS}, at most ${MAX_PREVIEW_ROWS}).` }),
  })
  .meta({ id: "PreviewPipelineInput" });
export type PreviewPipelineInput = z.input<typeof PreviewPipelineInput>;

/** A pipeline not saved yet: the schema and mappings are required, as on create. */
export const PreviewDraftInput = z
  .strictObject({
    schemaId: Id.meta({ description: "The schema of the workspace the draft validates against." }),
    mappings: PipelineMappings.default({ fieldMappings: [], options: {}, validations: {} }).meta({ description: "The draft's mappings (checked as on save)." }),
    limit: PreviewPipelineInput.shape.limit,
  })
  .meta({ id: "PreviewDraftInput" });
export type PreviewDraftInput = z.input<typeof PreviewDraftInput>;
export type PreviewDraftSampleInput = PreviewDraftInput & { sample: z.input<typeof SampleInput> };

/** GraphQL and tRPC: the same, with the sample inside (as text or base64). */
export const PreviewPipelineSampleInput = PreviewPipelineInput.extend({ sample: SampleInput }).meta({ id: "PreviewPipelineSampleInput" });
export type PreviewPipelineSampleInput = z.input<typeof PreviewPipelineSampleInput>;

const Counts = z
  .object({ total: z.number().int(), valid: z.number().int(), invalid: z.number().int(), skipped: z.number().int(), quarantined: z.number().int() })
  .meta({ id: "PreviewCounts" });

export const PipelinePreview = z
  .object({
    detected: z
      .object({
        format: z.string(),
        encoding: z.string().nullable(),
        gzip: z.boolean(),
        delimiter: z.string().nullable(),
        headerRow: z.boolean().nullable(),
        sheet: z.string().nullable(),
        recordPath: z.string().nullable(),
      })
      .meta({ id: "PreviewDetected" })
      .nullable()
      .meta({ description: "How the sample was read; null when it could not be opened (run.errorMessage says why)." }),
    columns: z.array(z.string()).meta({ description: "The source columns, in file order." }),
    rows: z
      .array(
        z
          .object({
            inputRow: z.number().int().meta({ description: "1-based over data rows (header excluded)." }),
            valid: z.boolean(),
            source: z.record(z.string(), z.unknown()),
            row: z.record(z.string(), z.unknown()),
            errors: z.array(z.object({ field: z.string(), message: z.string() }).meta({ id: "PreviewRowError" })),
          })
          .meta({ id: "PreviewRow" }),
      )
      .meta({ description: "The first `limit` rows, mapped and validated." }),
    counts: Counts,
    run: z
      .object({ status: z.enum(["completed", "failed"]), errorMessage: z.string().nullable() })
      .meta({ id: "PreviewVerdict", description: "What a run of this sample would end as under the mappings' validations." }),
    header: z
      .object({ missingColumns: z.array(z.string()), unusedColumns: z.array(z.string()), message: z.string().nullable() })
      .meta({ id: "PreviewHeader" })
      .nullable()
      .meta({ description: "CSV, TSV, XLSX with a header row: mapped columns the header lacks, header columns nothing reads." }),
    applied: z
      .object({ mappings: z.enum(["saved", "given"]), schemaId: z.string() })
      .meta({ id: "PreviewApplied", description: "What was tried: the pipeline's saved mappings or the given ones, and the schema." }),
    truncated: z
      .boolean()
      .meta({ description: "The file was larger than PREVIEW_MAX_BYTES: the sample is its start (its last, possibly cut, record left out), and form fields after the file are not read." }),
    timedOut: z.boolean().meta({ description: "Reading stopped at PREVIEW_TIMEOUT_MS; the counts cover the rows read." }),
    ms: z.number().int(),
  })
  .meta({ id: "PipelinePreview" });
export type PipelinePreview = z.output<typeof PipelinePreview>;
