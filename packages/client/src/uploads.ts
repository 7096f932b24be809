import { type Core, idempotencyKey, type PipelineRun, type Schemas } from "./client.js";
import { FpsError, FpsNetworkError, retryAfterSeconds } from "./errors.js";
import { backoff, retryDefaults, sleep } from "./retry.js";

export type Progress = (sent: number, total: number | undefined) => void;

export interface UploadRunOptions {
  /** The run's filename (default: the Blob's `name`, else `upload`). */
  filename?: string;
  contentType?: string;
  onProgress?: Progress;
  signal?: AbortSignal;
  /** Reused by retries; one is made when absent. */
  idempotencyKey?: string;
}

const CHUNK = 256 * 1024;

/** Bytes of a Blob or a stream, counted as they are read. */
function counted(source: Blob | ReadableStream<Uint8Array>, onChunk: (n: number) => void): ReadableStream<Uint8Array> {
  const reader = (source instanceof Blob ? source.stream() : source).getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      // Big reads are handed on in pieces, so progress moves smoothly.
      for (let at = 0; at < value.byteLength; at += CHUNK) {
        const piece = value.subarray(at, Math.min(value.byteLength, at + CHUNK));
        onChunk(piece.byteLength);
        controller.enqueue(piece);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

export const asciiName = (name: string) => name.replace(/[^\x20-\x7e]|["\\]/g, "_");

/** A multipart/form-data body with one file field, streamed from its source (never held whole). */
export function multipartBody(source: Blob | ReadableStream<Uint8Array>, filename: string, contentType: string, onChunk: (n: number) => void) {
  const boundary = `----fps${idempotencyKey().replaceAll("-", "")}`;
  const head = new TextEncoder().encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${asciiName(filename)}"; filename*=UTF-8''${encodeURIComponent(filename)}\r\nContent-Type: ${contentType}\r\n\r\n`,
  );
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const file = counted(source, onChunk).getReader();
  let stage = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (stage === 0) {
        stage = 1;
        return c.enqueue(head);
      }
      if (stage === 1) {
        const { value, done } = await file.read();
        if (!done) return c.enqueue(value);
        stage = 2;
        c.enqueue(tail);
        return c.close();
      }
    },
    cancel(reason) {
      return file.cancel(reason);
    },
  });
  const length = source instanceof Blob ? head.byteLength + source.size + tail.byteLength : undefined;
  return { body, boundary, length };
}

export async function failure(res: Response): Promise<FpsError> {
  const text = await res.text().catch(() => "");
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // kept as text
  }
  return FpsError.from(res, body);
}

/**
 * A file into a pipeline: `POST /pipelines/{id}/runs`, streamed (a Blob or a
 * stream of any size; nothing is held whole). Answers the new run. A Blob is
 * sent again on 429, 503 or a network error under the same idempotency key
 * (the service answers a repeated key with the first run); a stream, which
 * cannot be read twice, is sent once.
 */
export async function uploadRun(core: Core, pipelineId: string, source: Blob | ReadableStream<Uint8Array>, opts: UploadRunOptions = {}): Promise<PipelineRun> {
  const filename = opts.filename ?? (source instanceof Blob && "name" in source && typeof source.name === "string" && source.name ? source.name : "upload");
  const contentType = opts.contentType ?? (source instanceof Blob && source.type ? source.type : "application/octet-stream");
  const total = source instanceof Blob ? source.size : undefined;
  const key = opts.idempotencyKey ?? idempotencyKey();
  const retry = retryDefaults(source instanceof Blob ? core.retry : { retries: 0 });
  const url = `${core.baseUrl}/pipelines/${encodeURIComponent(pipelineId)}/runs`;
  for (let attempt = 1; ; attempt++) {
    let sent = 0;
    const { body, boundary } = multipartBody(source, filename, contentType, (n) => {
      sent += n;
      opts.onProgress?.(sent, total);
    });
    let res: Response;
    try {
      res = await core.rawFetch(url, {
        method: "POST",
        headers: core.headers({ "content-type": `multipart/form-data; boundary=${boundary}`, "idempotency-key": key }),
        body,
        signal: opts.signal,
        // Streamed request bodies need half duplex (Node's fetch and browsers).
        ...({ duplex: "half" } as object),
      });
    } catch (e) {
      if (opts.signal?.aborted || attempt > retry.retries) throw opts.signal?.aborted ? e : new FpsNetworkError(`upload of ${filename}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      await sleep(backoff(attempt, retry), opts.signal);
      continue;
    }
    if (res.ok) return (await res.json()) as PipelineRun;
    if ((res.status === 429 || res.status === 503) && attempt <= retry.retries) {
      await res.body?.cancel().catch(() => {});
      await sleep(backoff(attempt, retry, retryAfterSeconds(res.headers.get("retry-after"))), opts.signal);
      continue;
    }
    throw await failure(res);
  }
}

/** A PUT to a presigned link, retried on network errors and 5xx (a PUT of the same bytes is idempotent). */
async function putLink(core: Core, url: string, body: Blob, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  const retry = retryDefaults(core.retry);
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await core.rawFetch(url, { method: "PUT", body, headers, signal });
      if (res.ok || res.status < 500 || attempt > retry.retries) {
        if (!res.ok) throw await failure(res);
        return res;
      }
      await res.body?.cancel().catch(() => {});
    } catch (e) {
      if (e instanceof FpsError || signal?.aborted || attempt > retry.retries) throw e;
    }
    await sleep(backoff(attempt, retry), signal);
  }
}

export interface UploadDocumentOptions {
  connectionId: string;
  /** Folder in the connection's space (`inbound`, `reports/2026`; default: the root). */
  path?: string;
  /** The object's name (default: the Blob's `name`). */
  filename?: string;
  contentType?: string;
  force?: boolean;
  /** Parts sent at once for a multipart upload (default 4). */
  concurrency?: number;
  onProgress?: Progress;
  signal?: AbortSignal;
}

/**
 * A file into a connection's space through the presigned tickets: one PUT up
 * to the single-upload limit, else its parts in parallel, then completed (or
 * aborted if a part fails). Answers the stored object.
 */
export async function uploadDocument(core: Core, file: Blob, opts: UploadDocumentOptions): Promise<Schemas["DocumentObject"]> {
  const filename = opts.filename ?? ("name" in file && typeof file.name === "string" ? file.name : "");
  if (!filename) throw new TypeError("filename is required when the Blob has no name");
  const { data: ticket } = await core.api.POST("/documents/upload-url", {
    body: { connectionId: opts.connectionId, path: opts.path ?? "", filename, size: file.size, contentType: opts.contentType ?? (file.type || undefined), force: opts.force ?? false },
    signal: opts.signal,
  });
  const t = ticket!;
  if (t.mode === "single") {
    await putLink(core, t.url!, file, t.headers ?? {}, opts.signal);
    opts.onProgress?.(file.size, file.size);
    const { data } = await core.api.GET("/documents/object", { params: { query: { connectionId: opts.connectionId, path: t.path } } });
    return data!;
  }
  const parts = t.parts ?? [];
  const partSize = t.partSize!;
  const etags: { partNumber: number; etag: string }[] = [];
  let sent = 0;
  let next = 0;
  const worker = async () => {
    while (next < parts.length) {
      const part = parts[next++]!;
      const start = (part.partNumber - 1) * partSize;
      const slice = file.slice(start, Math.min(file.size, start + partSize));
      const res = await putLink(core, part.url, slice, {}, opts.signal);
      const etag = res.headers.get("etag");
      if (!etag) throw new FpsError({ statusCode: res.status, error: "bad_response", message: `part ${part.partNumber}: the store answered no ETag` });
      etags.push({ partNumber: part.partNumber, etag });
      sent += slice.size;
      opts.onProgress?.(sent, file.size);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 4, parts.length)) }, worker));
    etags.sort((a, b) => a.partNumber - b.partNumber);
    const { data } = await core.api.POST("/documents/upload-complete", {
      body: { connectionId: opts.connectionId, path: t.path, uploadId: t.uploadId!, parts: etags, force: opts.force ?? false },
    });
    return data!;
  } catch (e) {
    await core.api.POST("/documents/upload-abort", { body: { connectionId: opts.connectionId, path: t.path, uploadId: t.uploadId! } }).catch(() => {});
    throw e;
  }
}

export interface SendOutboundOptions {
  connectionName: string;
  pipelineName: string;
  outputFormat?: "csv" | "json" | "xml";
  outputFilename?: string;
  filename?: string;
  /** Largest part body in bytes (default 8 MiB; the service takes up to OUTBOUND_MAX_PART_BYTES, 16 MiB by default). */
  partBytes?: number;
  onProgress?: (partsSent: number, totalParts: number) => void;
  signal?: AbortSignal;
}

/**
 * Rows to an outbound pipeline: split into parts of at most `partBytes`, a
 * session opened for that many parts, each part sent, then completed. A
 * stream of rows is read to its end first (the session needs its part count
 * up front), held as serialised parts.
 */
export async function sendOutbound(core: Core, rows: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>, opts: SendOutboundOptions): Promise<Schemas["OutboundUploadCompleted"]> {
  const limit = opts.partBytes ?? 8 * 1024 * 1024;
  const parts: string[] = [];
  let current: string[] = [];
  let size = 2;
  for await (const row of rows as AsyncIterable<Record<string, unknown>>) {
    const text = JSON.stringify(row);
    if (current.length > 0 && size + text.length + 1 > limit) {
      parts.push(`[${current.join(",")}]`);
      current = [];
      size = 2;
    }
    current.push(text);
    size += text.length + 1;
  }
  if (current.length > 0 || parts.length === 0) parts.push(`[${current.join(",")}]`);
  const { data: session } = await core.api.POST("/outbound/uploads", {
    body: {
      connectionName: opts.connectionName,
      pipelineName: opts.pipelineName,
      totalParts: parts.length,
      ...(opts.outputFormat ? { outputFormat: opts.outputFormat } : {}),
      ...(opts.outputFilename ? { outputFilename: opts.outputFilename } : {}),
      ...(opts.filename ? { filename: opts.filename } : {}),
    },
    signal: opts.signal,
  });
  const uploadId = session!.uploadId;
  for (let i = 0; i < parts.length; i++) {
    await core.api.PUT("/outbound/uploads/{uploadId}/parts/{partNumber}", {
      params: { path: { uploadId, partNumber: String(i + 1) } },
      body: parts[i] as never,
      bodySerializer: (b: unknown) => b as string,
      headers: { "content-type": "application/json" },
      signal: opts.signal,
    });
    opts.onProgress?.(i + 1, parts.length);
  }
  const { data } = await core.api.POST("/outbound/uploads/{uploadId}/complete", {
    params: { path: { uploadId } },
    body: { parts: parts.map((_, i) => ({ partNumber: i + 1 })) },
    signal: opts.signal,
  });
  return data!;
}
