import { Elysia } from "elysia";
import { attachment } from "../../adapters/storage/disposition";
import type { ServiceContext } from "../../services/context";
import * as delta from "../../services/delta";
import * as files from "../../services/files";
import { callPlugin, type HttpOptions } from "../call";
import { describe, type RouteDescription } from "../openapi";

/** Files (links, search, JSON fetch) and the run delta, which reads processed files the same way. */
export function fileRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Files"] });
  const link = (which: files.RunFileKind) => ({
    detail: doc({
      summary: `Link to a run's ${which} file`,
      description:
        `A presigned GET link, usable without the API key until \`expiresIn\` seconds have passed; an altered or expired link is refused with 403.` +
        (which === "processed" ? " The file is named after the received one (`orders.csv` -> `orders.processed.json`). 409 while the run has no processed file." : "") +
        (which === "rejects"
          ? " The rows left out of the processed file (onInvalidRow `skip` or `quarantine`): a JSON array, one row a line, each `{inputRow, outcome, errors, row}` with the row as read (`orders.csv` -> `orders.rejects.json`). 404 saying why when the run has none."
          : ""),
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
    .post("/files/search", ({ call, input }) => files.searchFiles(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Search rows of processed files",
        description:
          "Every listed run must be of the caller's workspace (else 404 naming it). Hits are listed run by run in the order given, then by row. " +
          "Values match on their text (numbers and booleans as written); without `searchTerm` every row is a hit and `matchingFields` is empty. " +
          "Runs without a processed JSON file yet are skipped and not counted in `filesSearched`.",
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
          description:
            "By `pipelineRunId`, or by `filename` (the newest processed run of the workspace with that processed or received name). " +
            "The body is the file itself: a JSON array of the rows, one per line. With `offset` and/or `limit` only those rows are returned, still as a JSON array. " +
            "The run's id is in the `X-Pipeline-Run-Id` header. 409 while the run has no processed JSON file.",
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
        description:
          "A whole-record multiset difference: a row of the compare run not in the base is `added`, a row of the base not in the compare is `removed`, so a changed row is one of each. " +
          "Runs of different pipelines are a 400; a run without a processed JSON file is a 409. `changes` are ordered by rowIndex (removed first at equal index) and paged with `page`/`limit`.",
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
