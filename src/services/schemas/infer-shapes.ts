import { z } from "zod";
import { MappingOptions } from "../pipelines/shapes";
import { SampleInput } from "../shared/sample";
import { INFERRED_TYPES } from "./infer";

export const InferSchemaInput = z
  .strictObject({
    options: MappingOptions.optional().meta({ description: "How to read the sample, as a pipeline's mappings.options (format, delimiter, headerRow, encoding, recordPath, sheet)." }),
  })
  .meta({ id: "InferSchemaInput" });
export type InferSchemaInput = z.input<typeof InferSchemaInput>;

/** GraphQL and tRPC: the same, with the sample inside (as text or base64). */
export const InferSchemaSampleInput = InferSchemaInput.extend({ sample: SampleInput }).meta({ id: "InferSchemaSampleInput" });
export type InferSchemaSampleInput = z.input<typeof InferSchemaSampleInput>;

const Evidence = z
  .object({
    values: z.number().int().meta({ description: "Non-empty cells." }),
    empties: z.number().int().meta({ description: "Cells missing, empty or null." }),
    distinct: z.number().int().nullable().meta({ description: "Distinct non-empty values; null past 1000." }),
    examples: z.array(z.string()),
  })
  .meta({ id: "InferredColumnEvidence" });

export const InferredSchema = z
  .object({
    definition: z.record(z.string(), z.unknown()).meta({ description: "A JSON Schema (draft 2020-12) of one row, ready for POST /schemas." }),
    fieldMappings: z
      .array(z.object({ source: z.string(), target: z.string() }).meta({ id: "InferredFieldMapping" }))
      .meta({ description: "A suggested mappings.fieldMappings: each source column to its normalized target." }),
    columns: z.array(
      z
        .object({
          source: z.string(),
          target: z.string(),
          type: z.enum(INFERRED_TYPES).nullable().meta({ description: "null: nested values (objects, arrays) that no type here describes." }),
          required: z.boolean(),
          enum: z.array(z.string()).nullable(),
          maxLength: z.number().int().nullable(),
          evidence: Evidence,
        })
        .meta({ id: "InferredColumn" }),
    ),
    detected: z
      .object({ format: z.string(), encoding: z.string().nullable(), gzip: z.boolean(), delimiter: z.string().nullable() })
      .meta({ id: "InferDetected" }),
    rows: z.number().int().meta({ description: "Records read from the sample." }),
    truncated: z.boolean().meta({ description: "The file was larger than PREVIEW_MAX_BYTES: only its start was read (its last, possibly cut, record left out)." }),
    timedOut: z.boolean().meta({ description: "Reading stopped at PREVIEW_TIMEOUT_MS; the draft covers the rows read." }),
  })
  .meta({ id: "InferredSchema" });
export type InferredSchema = z.output<typeof InferredSchema>;
