import * as pipelines from "../src/services/pipelines";
import * as schemas from "../src/services/schemas";
import { sampleAndRest } from "../src/services/shared/sample";
import { builder } from "./builder";
import { inputType, outputType } from "./from-zod";

/**
 * A pipeline's dry run and schema inference. Mutations, though they change
 * nothing: their input carries the sample (text or base64), which a query's
 * GET form would put in the URL.
 */
builder.mutationFields((t) => ({
  previewPipeline: t.field({
    nullable: true,
    type: outputType(pipelines.PipelinePreview),
    description: "The sample through the pipeline's (or the given unsaved) mappings and schema; nothing is stored and no run is made.",
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: inputType(pipelines.PreviewPipelineSampleInput), required: true }) },
    resolve: async (_, { id, input }, { svc, actor }) => {
      const { sample, rest } = await sampleAndRest(input, svc.settings.preview.maxBytes);
      return { ...(await pipelines.previewPipeline(svc, { actor, id: String(id), sample, input: rest })) };
    },
  }),
  inferSchema: t.field({
    nullable: true,
    type: outputType(schemas.InferredSchema),
    description: "A draft JSON Schema, a suggested fieldMappings and the evidence per column, from a sample; nothing is stored.",
    args: { input: t.arg({ type: inputType(schemas.InferSchemaSampleInput), required: true }) },
    resolve: async (_, { input }, { svc, actor }) => {
      const { sample, rest } = await sampleAndRest(input, svc.settings.preview.maxBytes);
      return schemas.inferSchema(svc, { actor, sample, input: rest });
    },
  }),
}));
