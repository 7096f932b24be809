import { Elysia } from "elysia";
import { z } from "zod";
import type { ServiceContext } from "../../services/context";
import { ingest } from "../../services/run-path";
import * as runs from "../../services/runs";
import { callPlugin, type HttpOptions } from "../call";
import { inputOf } from "../../transport/input";
import { budgetOf, declaredBytes } from "../../transport/admission";
import { digestStream, hashing, idempotencyOf, ownBodyReplay } from "../idempotency";
import { type FilePart, readFileForm } from "../multipart";
import { describe, type RouteDescription } from "../openapi";
import { pagedList } from "./lists";

/** The upload form, as the API description shows it (the route reads it with busboy, not with this shape). */
const UploadRunForm = z
  .object({ file: z.string().meta({ format: "binary", description: "The file; its name becomes the run's filename." }) })
  .meta({ id: "UploadRunForm" });

export function runRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Pipeline runs"] });
  return (
    new Elysia({ name: "routes:runs" })
      .use(callPlugin(svc, http))
      .get(
        "/pipeline-runs",
        async ({ call, query }) => pagedList(await runs.listRuns(svc, { ...call, query }), (r) => runs.presentRun(r, call.version)),
        {
          detail: doc({
            summary: "List pipeline runs across pipelines",
            query: runs.ListRunsQuery,
            response: { pageOf: runs.PipelineRun },
          }),
        },
      )
      // A static segment: Elysia prefers it to `/pipeline-runs/:id`, so `/pipeline-runs/delta` (files routes) stays reachable.
      .get(
        "/pipeline-runs/pipeline/:pipelineId",
        async ({ call, params, query }) =>
          pagedList(await runs.listPipelineRuns(svc, { ...call, pipelineId: params.pipelineId, query }), (r) => runs.presentRun(r, call.version)),
        {
          detail: doc({
            summary: "List one pipeline's runs",
            query: runs.ListPipelineRunsQuery,
            response: { pageOf: runs.PipelineRun },
          }),
        },
      )
      .get("/pipeline-runs/:id", async ({ call, params }) => runs.presentRun(await runs.getRun(svc, { ...call, id: params.id }), call.version), {
        detail: doc({ summary: "Get a pipeline run", response: { one: runs.PipelineRun } }),
      })
      .patch(
        "/pipeline-runs/:id/status",
        async ({ call, params, input }) =>
          runs.presentRun(await runs.acknowledgeRun(svc, { ...call, id: params.id, input: inputOf(runs.AcknowledgeRunInput, input) }), call.version),
        {
          detail: doc({
            summary: "Acknowledge a pipeline run",
            body: runs.AcknowledgeRunInput,
            response: { one: runs.PipelineRun },
          }),
        },
      )
      .post("/pipeline-runs/:id/retry", async ({ call, params }) => runs.presentRun(await runs.retryRun(svc, { ...call, id: params.id }), call.version), {
        detail: doc({
          summary: "Retry a failed pipeline run",
          response: { one: runs.PipelineRun },
          errors: { conflict: "the run is not `failed`" },
        }),
      })
      .post(
        "/pipeline-runs/:id/reprocess",
        async ({ call, params, input }) => runs.presentRun(await runs.reprocessRun(svc, { ...call, id: params.id, input: inputOf(runs.ReprocessRunInput, input) }), call.version),
        {
          detail: doc({
            summary: "Reprocess a run's original file as a new run",
            body: runs.ReprocessRunInput,
            bodyOptional: true,
            response: { one: runs.PipelineRun },
            errors: {
              invalid_input: "`version` is not a whole number of at least 1, or the pipeline no longer takes files from the run's source",
              not_found: "no such run, or the pipeline has no such `version`",
              conflict: "the run's pipeline was deleted or is inactive, the run has not ended, or its original file is no longer stored",
            },
          }),
        },
      )
      .post(
        "/pipelines/:id/runs",
        async ({ call, params, request, set }) => {
          const maxBytes = svc.settings.maxUploadBytes;
          const idem = idempotencyOf(request);
          if (idem?.replay) {
            // The same Idempotency-Key: the file is read (not stored) and compared with the first one's.
            const answer = ownBodyReplay(idem, await receiveFile(request, maxBytes, (file) => digestStream(idem, file.body)));
            set.status = answer.status;
            set.headers["idempotent-replayed"] = "true";
            return answer.body;
          }
          // Refused before a byte of the body is read.
          await runs.pipelineForFiles(svc, { workspaceId: call.actor.workspaceId, pipelineId: params.id, source: "upload" });
          const run = await receiveFile(request, maxBytes, (file) =>
            ingest(svc, {
              door: "upload",
              workspaceId: call.actor.workspaceId,
              pipelineId: params.id,
              filename: file.filename,
              mimetype: file.mimetype,
              body: idem ? hashing(idem, file.body) : file.body,
              maxBytes,
              expectedBytes: file.declaredBytes,
              by: call.actor,
            }),
          );
          // A streamed upload without content-length was not charged on admission: its size counts against the key's byte budget now.
          if (declaredBytes(request) === 0) svc.rateLimits.chargeBytes(budgetOf(call.actor), run.row.size);
          return runs.presentRun(run, call.version);
        },
        {
          // The file streams to storage as it arrives; the dashboard sends it with the session cookie to watch its progress.
          ownBody: true,
          sessionCookie: true,
          parse: "none",
          detail: doc({
            summary: "Start a run with an uploaded file",
            form: UploadRunForm,
            response: { one: runs.PipelineRun },
            errors: {
              invalid_input: "no file part named `file`, a malformed form, or an outbound pipeline (it takes outbound uploads)",
              conflict: "the pipeline is inactive",
              payload_too_large: "the file is over MAX_UPLOAD_BYTES; nothing is kept",
              unsupported_media_type: "send multipart/form-data with the file in the field `file`",
            },
          }),
        },
      )
  );
}

/**
 * Streams the form's `file` part into `start` (which stores it) without
 * holding it. Other parts are read past; a form without a `file` part is a
 * 400. The file's size is enforced by `start` (MAX_UPLOAD_BYTES).
 */
async function receiveFile<T>(request: Request, maxBytes: number, start: (file: FilePart & { filename: string }) => Promise<T>): Promise<T> {
  const rules = { noun: "file", maxFileBytes: maxBytes, slack: 1024 * 1024, limits: { fields: 100, fieldSize: 64 * 1024, parts: 200 }, consumerStores: true };
  return (await readFileForm(request, rules, (file) => start({ ...file, filename: file.filename ?? "" }))).value;
}
