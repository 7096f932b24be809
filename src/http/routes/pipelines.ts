import { Elysia } from "elysia";
import type { ServiceContext } from "../../services/context";
import * as pipelines from "../../services/pipelines";
import { DeleteResult } from "../../services/shared/shapes";
import { callPlugin, type HttpOptions, presenter } from "../call";
import { inputOf } from "../../transport/input";
import { describe, type RouteDescription, type RouteErrors } from "../openapi";
import { jsonField, readSampleForm } from "../sample-form";
import { formRef, PreviewForm } from "./sample-doc";
import { bareList, pagedList } from "./lists";

const SAVE_ERRORS: RouteErrors = {
  feature_not_enabled: "aggregated mappings (`sources`) while the workspace's `aggregated-mappings` feature is off (`feature_not_enabled`)",
  not_found: "no connection `clientId`, schema `schemaId` or webhook in `webhookIds`",
  conflict: "a pipeline with this `name` exists",
};

export function pipelineRoutes(svc: ServiceContext, http: HttpOptions) {
  // A pipeline from the read cache is presented once (the same for every version).
  const present = presenter((rec: pipelines.PipelineRecord) => pipelines.presentPipeline(rec));
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Pipelines"] });
  return new Elysia({ name: "routes:pipelines" })
    .use(callPlugin(svc, http))
    .get("/pipelines", async ({ call, query, set }) => bareList(set, await pipelines.listPipelines(svc, { ...call, query }), pipelines.presentPipeline), {
      detail: doc({ summary: "List pipelines", query: pipelines.ListPipelinesQuery, response: { arrayOf: pipelines.Pipeline } }),
    })
    .post("/pipelines", async ({ call, input }) => pipelines.presentPipeline(await pipelines.createPipeline(svc, { ...call, input: inputOf(pipelines.CreatePipelineInput, input) })), {
      detail: doc({
        summary: "Create a pipeline",
        body: pipelines.CreatePipelineInput,
        response: { one: pipelines.Pipeline },
        errors: SAVE_ERRORS,
      }),
    })
    .get("/pipelines/:id", ({ call, params }) => {
      // A kept pipeline is answered without a promise (Elysia waits only for a Promise returned).
      const rec = pipelines.getPipeline(svc, { ...call, id: params.id });
      return rec instanceof Promise ? rec.then((r) => present(r, call.version)) : present(rec, call.version);
    }, {
      detail: doc({ summary: "Get a pipeline", response: { one: pipelines.Pipeline } }),
    })
    .patch(
      "/pipelines/:id",
      async ({ call, params, input }) =>
        pipelines.presentPipeline(await pipelines.updatePipeline(svc, { ...call, id: params.id, input: inputOf(pipelines.UpdatePipelineInput, input) })),
      {
        detail: doc({
          summary: "Update a pipeline",
          body: pipelines.UpdatePipelineInput,
          response: { one: pipelines.Pipeline },
          errors: SAVE_ERRORS,
        }),
      },
    )
    .get(
      "/pipelines/:id/versions",
      async ({ call, params, query }) => pagedList(await pipelines.listPipelineVersions(svc, { ...call, id: params.id, query }), pipelines.presentVersion),
      {
        detail: doc({
          summary: "List a pipeline's versions",
          query: pipelines.ListPipelineVersionsQuery,
          response: { pageOf: pipelines.PipelineVersion },
        }),
      },
    )
    .post(
      "/pipelines/:id/preview",
      async ({ call, params, request }) => {
        // Refused before a byte of the sample is read.
        await pipelines.getPipeline(svc, { ...call, id: params.id });
        const { sample, fields } = await readSampleForm(request, svc.settings.preview.maxBytes, svc.settings.maxUploadBytes);
        const input = { mappings: jsonField(fields, "mappings"), schemaId: fields.schemaId, limit: fields.limit };
        return pipelines.previewPipeline(svc, { ...call, id: params.id, sample, input, signal: request.signal });
      },
      {
        ownBody: true,
        parse: "none",
        detail: {
          ...doc({
            summary: "Preview a pipeline on a sample file (dry run)",
            response: { one: pipelines.PipelinePreview },
            errors: { payload_too_large: "the whole request is over MAX_UPLOAD_BYTES (the sample itself is read up to PREVIEW_MAX_BYTES)" },
          }),
          requestBody: { required: true, content: { "multipart/form-data": { schema: formRef(PreviewForm) } } },
        },
      },
    )
    .delete("/pipelines/:id", ({ call, params }) => pipelines.deletePipeline(svc, { ...call, id: params.id }), {
      detail: doc({ summary: "Delete a pipeline", response: { one: DeleteResult } }),
    });
}
