// The browser-safe entry: nothing here imports a Node module.
import type { Client } from "openapi-fetch";
import { type Core, createCore, type FpsClientOptions, type PipelineRun, type Schemas, type paths } from "./client.js";
import type { RetryOptions } from "./retry.js";
import { type FollowOptions, followRun, waitForRun, type WaitOptions } from "./follow.js";
import { type ListItem, type ListParams, type ListPath, paginate, type SearchBody, type SearchHit, searchAll } from "./paginate.js";
import { sendOutbound, type SendOutboundOptions, uploadDocument, type UploadDocumentOptions, uploadRun, type UploadRunOptions } from "./uploads.js";

export { FpsError, FpsNetworkError } from "./errors.js";
export { LATEST_VERSION, type FpsClientOptions, type PipelineRun, type Schemas, type paths, type components } from "./client.js";
export { FINAL_STATUSES, type FollowOptions, type WaitOptions } from "./follow.js";
export type { ListPath, ListItem, ListParams, SearchBody, SearchHit } from "./paginate.js";
export { verifyWebhook, type RunEventPayload } from "./webhooks.js";
export type { Progress, SendOutboundOptions, UploadDocumentOptions, UploadRunOptions } from "./uploads.js";
export type { RetryOptions } from "./retry.js";

/** A client of the File Pipeline Service's REST API. */
export interface FpsClient {
  /** Every REST route, typed from the service's OpenAPI document: `api.GET("/pipelines/{id}", { params: { path: { id } } })`. A failed call throws `FpsError`. */
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly version: string;
  readonly retry: RetryOptions | undefined;
  /** The headers every call carries (key, version), for requests made by hand. */
  headers(extra?: Record<string, string>): Headers;
  /** Every item of a list route, page after page (page, offset or cursor style). */
  paginate<P extends ListPath>(path: P, params?: ListParams<P>): AsyncGenerator<ListItem<P>>;
  /** Every hit of a row search. */
  searchAll(body: SearchBody): AsyncGenerator<SearchHit>;
  /** A file (Blob or stream) into a pipeline; answers the new run. */
  uploadRun(pipelineId: string, source: Blob | ReadableStream<Uint8Array>, opts?: UploadRunOptions): Promise<PipelineRun>;
  /** A file into a connection's space through presigned tickets (single or multipart). */
  uploadDocument(file: Blob, opts: UploadDocumentOptions): Promise<Schemas["DocumentObject"]>;
  /** Rows to an outbound pipeline, split into parts. */
  sendOutbound(rows: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>, opts: SendOutboundOptions): Promise<Schemas["OutboundUploadCompleted"]>;
  /** The run as it changes, live (GraphQL subscription over SSE), falling back to polling. */
  followRun(runId: string, opts?: FollowOptions): AsyncGenerator<PipelineRun>;
  /** The run once it reaches a final status. */
  waitForRun(runId: string, opts?: WaitOptions): Promise<PipelineRun>;
  /** A run file's bytes, through its presigned link: the file received, the processed rows, or the rows skipped or quarantined. */
  download(kind: RunFileKind, runId: string): Promise<Response>;
}

export type RunFileKind = "original" | "processed" | "rejects";
const RUN_FILE_ROUTES = {
  original: "/files/pipeline-runs/{id}/original",
  processed: "/files/pipeline-runs/{id}/processed",
  rejects: "/files/pipeline-runs/{id}/rejects",
} as const;

export function createFpsClient(opts: FpsClientOptions): FpsClient {
  const core: Core = createCore(opts);
  return {
    api: core.api,
    baseUrl: core.baseUrl,
    version: core.version,
    retry: core.retry,
    headers: core.headers,
    paginate: (path, params) => paginate(core, path, params),
    searchAll: (body) => searchAll(core, body),
    uploadRun: (pipelineId, source, o) => uploadRun(core, pipelineId, source, o),
    uploadDocument: (file, o) => uploadDocument(core, file, o),
    sendOutbound: (rows, o) => sendOutbound(core, rows, o),
    followRun: (runId, o) => followRun(core, runId, o),
    waitForRun: (runId, o) => waitForRun(core, runId, o),
    async download(kind, runId) {
      const { data } = await core.api.GET(RUN_FILE_ROUTES[kind], { params: { path: { id: runId } } });
      const res = await core.fetch(new Request(data!.url));
      if (!res.ok) throw new Error(`download of ${kind} for ${runId}: ${res.status}`);
      return res;
    },
  };
}
