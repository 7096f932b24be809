import { Readable } from "node:stream";
import type { ReadableStream as NodeWebStream } from "node:stream/web";
import busboy from "busboy";
import { Elysia } from "elysia";
import { z } from "zod";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../../services/context";
import * as runs from "../../services/runs";
import { acceptsSessionCookie, callPlugin, type HttpOptions, readsOwnBody } from "../call";
import { budgetOf, declaredBytes } from "../guard";
import { digestStream, hashing, idempotencyOf, ownBodyReplay } from "../idempotency";
import { describe, type RouteDescription } from "../openapi";
import { pagedList } from "./lists";

const UPLOAD_ROUTE = "/pipelines/:id/runs";
readsOwnBody("POST", UPLOAD_ROUTE);
acceptsSessionCookie("POST", UPLOAD_ROUTE);

/** Multipart framing (boundaries, part headers) a file upload may add to the file's own size. */
const MULTIPART_SLACK = 1024 * 1024;
/** Chunk size while streaming an upload to storage. */
const UPLOAD_CHUNK = 512 * 1024;

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
            description: "Newest first. `connectionName` (or its deprecated alias `clientName`) matches part of the connection's name, any case.",
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
            description: "Runs of a deleted pipeline stay listed, with `pipelineName: DELETED PIPELINE`.",
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
          runs.presentRun(await runs.acknowledgeRun(svc, { ...call, id: params.id, input: input as never }), call.version),
        {
          detail: doc({
            summary: "Acknowledge a pipeline run",
            description: "Any run, whatever its status, may be acknowledged; `acknowledged` is the only status a client sets.",
            body: runs.AcknowledgeRunInput,
            response: { one: runs.PipelineRun },
          }),
        },
      )
      .post("/pipeline-runs/:id/retry", async ({ call, params }) => runs.presentRun(await runs.retryRun(svc, { ...call, id: params.id }), call.version), {
        detail: doc({
          summary: "Retry a failed pipeline run",
          description: "A new attempt of the same run with the pipeline and schema as they are now; only a `failed` run (409 otherwise).",
          response: { one: runs.PipelineRun },
          errors: { conflict: "the run is not `failed`" },
        }),
      })
      .post(
        "/pipeline-runs/:id/reprocess",
        async ({ call, params, input }) => runs.presentRun(await runs.reprocessRun(svc, { ...call, id: params.id, input: input as never }), call.version),
        {
          detail: doc({
            summary: "Reprocess a run's original file as a new run",
            description:
              "A new run (`pending`) from the run's stored original, processed under the pipeline's current version or the `version` named; " +
              "it names the run in `reprocessOf`, and the run itself is kept as it is. Compare the two with GET /pipeline-runs/delta. The body is optional.",
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
        UPLOAD_ROUTE,
        async ({ call, params, request, set }) => {
          const maxBytes = svc.settings.maxUploadBytes;
          const idem = idempotencyOf(request);
          if (idem?.replay) {
            // The same Idempotency-Key: the file is read (not stored) and compared with the first one's.
            const answer = ownBodyReplay(idem, await receiveFile(request, maxBytes, (file) => digestStream(idem, file.body)));
            set.status = answer.status;
            set.headers["idempotent-replayed"] = "true";
            return answer.body as never;
          }
          // Refused before a byte of the body is read.
          await runs.pipelineForFiles(svc, { workspaceId: call.actor.workspaceId, pipelineId: params.id, source: "upload" });
          const run = await receiveFile(request, maxBytes, (file) =>
            runs.startRun(svc, {
              workspaceId: call.actor.workspaceId,
              pipelineId: params.id,
              filename: file.filename,
              mimetype: file.mimetype,
              body: idem ? hashing(idem, file.body) : file.body,
              source: "upload",
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
          parse: "none",
          detail: doc({
            summary: "Start a run with an uploaded file",
            description:
              "`multipart/form-data` with the file in the field `file`; streamed to storage as it arrives (at most MAX_UPLOAD_BYTES, 413 above). " +
              "Answers the new run (`pending`). An inactive pipeline is a 409; an outbound pipeline takes its data through outbound uploads (400).",
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

interface IncomingFile {
  filename: string;
  mimetype: string;
  body: AsyncIterable<Uint8Array>;
  /** The request's content-length (the form, so a little more than the file), when it was given. */
  declaredBytes?: number;
}

/**
 * Streams the form's `file` part into `start` (which stores it) without
 * holding it: busboy parses the multipart body as it arrives. Other parts
 * are read past; a form without a `file` part is a 400.
 */
async function receiveFile<T>(request: Request, maxBytes: number, start: (file: IncomingFile) => Promise<T>): Promise<T> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new AppError(
      "unsupported_media_type",
      `content-type: '${contentType}' is not accepted here; send multipart/form-data with the file in the field 'file'`,
    );
  }
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes + MULTIPART_SLACK) {
    throw new AppError("payload_too_large", `file: larger than the ${maxBytes}-byte upload limit`);
  }
  if (!request.body) throw missingFile(false);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { "content-type": contentType },
      highWaterMark: UPLOAD_CHUNK,
      fileHwm: UPLOAD_CHUNK,
      limits: { fields: 100, fieldSize: 64 * 1024, parts: 200, headerPairs: 100 },
    });
  } catch (e) {
    throw new AppError("invalid_input", `content-type: ${(e as Error).message}`);
  }
  const source = Readable.fromWeb(request.body as unknown as NodeWebStream<Uint8Array>);

  return new Promise<T>((resolve, reject) => {
    let started: Promise<T> | null = null;
    let fileAsField = false;
    let settled = false;
    // Answers only once the file's consumer has settled, so that a refused upload has cleaned up what it stored.
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      source.unpipe(parser);
      source.destroy();
      parser.destroy();
      if (!started) return reject(e);
      // A file received whole is kept even if the rest of the form broke: the caller gets its run.
      started.then(resolve, () => reject(e));
    };
    parser.on("file", (name, stream, info) => {
      if (name !== "file" || started) {
        stream.resume();
        return;
      }
      // A truncated form errors the part before the consumer may be reading it; the consumer sees the error when it reads.
      stream.on("error", () => {});
      started = start({ filename: info.filename ?? "", mimetype: info.mimeType, body: stream, declaredBytes: Number.isFinite(declared) ? declared : undefined });
      started.catch(fail);
    });
    parser.on("field", (name) => {
      if (name === "file") fileAsField = true;
    });
    parser.on("close", () => {
      if (!started) return fail(missingFile(fileAsField));
      started.then((v) => {
        settled = true;
        resolve(v);
      }, fail);
    });
    parser.on("error", (e) => fail(new AppError("invalid_input", `body: malformed multipart form (${(e as Error).message})`)));
    source.on("error", (e) => fail(new AppError("invalid_input", `body: the upload ended before the form was complete (${(e as Error).message})`)));
    source.pipe(parser);
  });
}

function missingFile(sentAsField: boolean): AppError {
  return new AppError(
    "invalid_input",
    sentAsField
      ? "file: must be a file part (with a filename), not a plain form field"
      : "file: is required; send the file as multipart/form-data in the field 'file'",
  );
}
