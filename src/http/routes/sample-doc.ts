import { z } from "zod";

/** The sample forms, as the API description shows them (the routes read them with busboy, not with these shapes). */
const file = z.string().meta({ format: "binary", description: "The sample file; its name helps detect the format. Read up to PREVIEW_MAX_BYTES." });

export const PreviewForm = z
  .object({
    file,
    mappings: z.string().optional().meta({ description: "JSON: mappings to try instead of the pipeline's ({ fieldMappings, options, validations })." }),
    schemaId: z.string().optional().meta({ description: "A schema to validate against instead of the pipeline's." }),
    limit: z.string().optional().meta({ description: "Rows returned in full: 1 to 1000 (default 100)." }),
  })
  .meta({ id: "PreviewForm" });

export const InferSchemaForm = z
  .object({
    file,
    options: z.string().optional().meta({ description: "JSON: how to read the sample, as mappings.options (format, delimiter, headerRow, encoding, recordPath, sheet)." }),
  })
  .meta({ id: "InferSchemaForm" });

export const formRef = (shape: z.ZodType) => ({ $ref: `#/components/schemas/${z.globalRegistry.get(shape)!.id}` });
