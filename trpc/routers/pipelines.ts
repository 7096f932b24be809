import type { z } from "zod";
import * as pipelines from "../../src/services/pipelines";
import { sampleAndRest } from "../../src/services/shared/sample";
import { pagination } from "../../src/services/shared/shapes";
import { ById, ByIdWith, input, procedure, router } from "../init";

/** What a typed client may filter by; the service checks the values. */
type ListInput = z.input<typeof pipelines.ListPipelinesQuery>;
type VersionsInput = { id: string } & pipelines.ListPipelineVersionsQuery;

export const pipelinesRouter = router({
  list: procedure.input(input<ListInput | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await pipelines.listPipelines(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(pipelines.presentPipeline), pagination: pagination(page) };
  }),
  get: procedure
    .input(ById)
    .query(async ({ ctx, input: { id } }) => pipelines.presentPipeline(await pipelines.getPipeline(ctx.svc, { actor: ctx.actor, id }))),
  create: procedure
    .input(input<pipelines.CreatePipelineInput>())
    .mutation(async ({ ctx, input: data }) => pipelines.presentPipeline(await pipelines.createPipeline(ctx.svc, { actor: ctx.actor, input: data }))),
  update: procedure
    .input(ByIdWith<pipelines.UpdatePipelineInput>())
    .mutation(async ({ ctx, input: { id, data } }) =>
      pipelines.presentPipeline(await pipelines.updatePipeline(ctx.svc, { actor: ctx.actor, id, input: data })),
    ),
  /** The pipeline's versions, newest first: what changed, who changed it and when (docs/decisions/pipeline-versions.md). */
  versions: procedure.input(input<VersionsInput>()).query(async ({ ctx, input: raw }) => {
    const { id, ...query } = ById.loose().parse(raw);
    const page = await pipelines.listPipelineVersions(ctx.svc, { actor: ctx.actor, id, query });
    return { data: page.items.map(pipelines.presentVersion), pagination: pagination(page) };
  }),
  /** A dry run on a sample given as text or base64 (docs/decisions/preview.md); a mutation, for its large input. */
  preview: procedure.input(ByIdWith<pipelines.PreviewPipelineSampleInput>()).mutation(async ({ ctx, input: { id, data }, signal }) => {
    const { sample, rest } = await sampleAndRest(data, ctx.svc.settings.preview.maxBytes);
    return pipelines.previewPipeline(ctx.svc, { actor: ctx.actor, id, sample, input: rest, signal });
  }),
  /** The same dry run for a pipeline not saved yet: `schemaId` and `mappings` instead of an id (the mapping editor before its first save). */
  previewDraft: procedure.input(input<pipelines.PreviewDraftSampleInput>()).mutation(async ({ ctx, input: data, signal }) => {
    const { sample, rest } = await sampleAndRest(data, ctx.svc.settings.preview.maxBytes);
    return pipelines.previewDraft(ctx.svc, { actor: ctx.actor, sample, input: rest, signal });
  }),
  delete: procedure.input(ById).mutation(({ ctx, input: { id } }) => pipelines.deletePipeline(ctx.svc, { actor: ctx.actor, id })),
});
