import { Elysia } from "elysia";
import { attachment } from "../../adapters/storage/disposition";
import type { ServiceContext } from "../../services/context";
import * as delta from "../../services/delta";
import * as files from "../../services/files";
import { callPlugin, type HttpOptions } from "../call";
import { inputOf } from "../../transport/input";
import { describe, type RouteDescription } from "../openapi";

/** Files (links, search, JSON fetch) and the run delta, which reads processed files the same way. */
export function fileRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Files"] });
  const link = (which: files.RunFileKind) => ({
    detail: doc({
      summary: `Link to a run's ${which} file`,
      response: { one: files.FileLink },
      errors: {
        not_found: `the run's ${which} file is no longer stored`,
        ...(which === "processed" ? { conflict: "the run has no processed file (yet)" } : {}),
      },
    }),
  });
  return new Elysia({ name: "routes:files" })
    .use(callPlugin(svc, http))
    .get("/files/pipeline-runs/:id/original", ({ call, params }) => files.getRunFileLink(svc, { ...call, runId: params.id, which: "original" }), link("original"))
    .get("/files/pipeline-runs/:id/processed", ({ call, params }) => files.getRunFileLink(svc, { ...call, runId: params.id, which: "processed" }), link("processed"))
    .get("/files/pipeline-runs/:id/rejects", ({ call, params }) => files.getRunFileLink(svc, { ...call, runId: params.id, which: "rejects" }), link("rejects"))
    .post("/files/search", ({ call, input }) => files.searchFiles(svc, { ...call, input: inputOf(files.SearchFilesInput, input) }), {
      detail: doc({
        summary: "Search rows of processed files",
        body: files.SearchFilesInput,
        response: { one: files.SearchFilesResult },
        errors: { not_found: "a run in `pipelineRunIds` (the message names it)" },
      }),
    })
    .get(
      "/files/json",
      async ({ call, query }) => {
        const file = await files.getProcessedJson(svc, { ...call, query });
        // Headers set on the context (the version) are merged into a returned Response by Elysia.
        return new Response(file.body, {
          headers: {
            "content-type": file.contentType,
            "content-disposition": attachment(file.filename).replace(/^attachment/, "inline"),
            "x-pipeline-run-id": file.pipelineRunId,
          },
        });
      },
      {
        detail: doc({
          summary: "Fetch a processed JSON file",
          query: files.ProcessedJsonQuery,
          response: { json: { type: "array", items: { type: "object" } }, description: "The processed file" },
          errors: {
            not_found: "no pipeline run `pipelineRunId`, no processed file named `filename`, or its file is no longer stored",
            conflict: "the run has no processed JSON file (yet)",
          },
        }),
      },
    )
    .get("/pipeline-runs/delta", ({ call, query }) => delta.getRunDelta(svc, { ...call, query }), {
      detail: describe({
        tags: ["Pipeline runs"],
        summary: "Rows added and removed between two runs of one pipeline",
        query: delta.DeltaQuery,
        response: { one: delta.RunDelta },
        errors: {
          invalid_input: "the two runs belong to different pipelines",
          not_found: "no run `baseRunId` or `compareRunId`, or its processed file is no longer stored",
          conflict: "a run has no processed JSON file (yet), or one changed while it was read",
        },
      }),
    });
}
