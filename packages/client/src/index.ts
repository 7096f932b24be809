// The browser-safe entry: nothing here imports a Node module.
import { type Core, createCore, type FpsClientOptions, type PipelineRun, type Schemas } from "./client.js";
import { type FollowOptions, followRun, waitForRun } from "./follow.js";
import { type ListPath, paginate, searchAll } from "./paginate.js";
import { sendOutbound, type SendOutboundOptions, uploadDocument, type UploadDocumentOptions, uploadRun, type UploadRunOptions } from "./uploads.js";

export { FpsError, FpsNetworkError } from "./errors.js";
export { LATEST_VERSION, type FpsClientOptions, type PipelineRun, type Schemas, type paths, type components } from "./client.js";
export { FINAL_STATUSES } from "./follow.js";
export type { ListPath, ListItem } from "./paginate.js";
export { verifyWebhook, type RunEventPayload } from "./webhooks.js";
export type { Progress } from "./uploads.js";

/** A client of the File Pipeline Service's REST API. */
export function createFpsClient(opts: FpsClientOptions) {
  const core: Core = createCore(opts);
  return {
    /** Every REST route, typed from the service's OpenAPI document: `api.GET("/pipelines/{id}", { params: { path: { id } } })`. */
    api: core.api,
    baseUrl: core.baseUrl,
    version: core.version,
    /** The headers every call carries (key, version), for requests made by hand. */
    headers: core.headers,
    retry: core.retry,
    /** Every item of a list route, page after page (page, offset or cursor style). */
    paginate: <P extends ListPath>(path: P, params?: Parameters<typeof paginate<P>>[2]) => paginate(core, path, params),
    /** Every hit of a row search. */
    searchAll: (body: Parameters<typeof searchAll>[1]) => searchAll(core, body),
    /** A file (Blob or stream) into a pipeline; answers the new run. */
    uploadRun: (pipelineId: string, source: Blob | ReadableStream<Uint8Array>, o?: UploadRunOptions) => uploadRun(core, pipelineId, source, o),
    /** A file into a connection's space through presigned tickets (single or multipart). */
    uploadDocument: (file: Blob, o: UploadDocumentOptions) => uploadDocument(core, file, o),
    /** Rows to an outbound pipeline, split into parts. */
    sendOutbound: (rows: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>, o: SendOutboundOptions) => sendOutbound(core, rows, o),
    /** The run as it changes, live (GraphQL subscription over SSE), falling back to polling. */
    followRun: (runId: string, o?: FollowOptions) => followRun(core, runId, o),
    /** The run once it reaches a final status. */
    waitForRun: (runId: string, o?: Parameters<typeof waitForRun>[2]) => waitForRun(core, runId, o),
    /** A presigned link's bytes (original, processed or rejected rows). */
    async download(kind: "original" | "processed", runId: string): Promise<Response> {
      const path = kind === "original" ? "/files/pipeline-runs/{id}/original" : "/files/pipeline-runs/{id}/processed";
      const { data } = await core.api.GET(path, { params: { path: { id: runId } } });
      const res = await core.fetch(new Request(data!.url));
      if (!res.ok) throw new Error(`download of ${kind} for ${runId}: ${res.status}`);
      return res;
    },
  };
}

export type FpsClient = ReturnType<typeof createFpsClient>;
export type { Core, PipelineRun as Run, Schemas as Types };
