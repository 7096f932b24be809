// The Node.js (and Bun) entry: the browser-safe client plus files from disk.
import { createReadStream, openAsBlob, statSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { basename } from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { idempotencyKey, type PipelineRun } from "./client.js";
import { FpsError, FpsNetworkError, retryAfterSeconds } from "./errors.js";
import type { FpsClient } from "./index.js";
import { backoff, retryDefaults, sleep } from "./retry.js";
import { asciiName, type UploadRunOptions } from "./uploads.js";

export * from "./index.js";

const TYPES: Record<string, string> = {
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  json: "application/json",
  ndjson: "application/x-ndjson",
  xml: "application/xml",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  gz: "application/gzip",
  zip: "application/zip",
  txt: "text/plain",
};

const typeOf = (path: string) => TYPES[basename(path).split(".").pop()?.toLowerCase() ?? ""] ?? "application/octet-stream";

/** A file on disk as a Blob read as it is sent, with its name and a content type from its extension. */
export async function fileBlob(path: string): Promise<File> {
  const blob = await openAsBlob(path, { type: typeOf(path) });
  return Object.assign(blob, { name: basename(path), lastModified: Date.now(), webkitRelativePath: "" }) as File;
}

/**
 * A file on disk into a pipeline through node:http, streamed with
 * back-pressure: Node's fetch (undici) holds a streamed request body in
 * memory as fast as it reads it (a 1 GB upload took 1 GB of RSS), node:http
 * reads the file only as the socket drains (~85 MB). Retried like
 * `uploadRun` (429, 503, network errors; the file is read again under the
 * same idempotency key).
 */
export async function uploadRunFile(client: FpsClient, pipelineId: string, path: string, opts: UploadRunOptions = {}): Promise<PipelineRun> {
  const filename = opts.filename ?? basename(path);
  const contentType = opts.contentType ?? typeOf(path);
  const size = statSync(path).size;
  const key = opts.idempotencyKey ?? idempotencyKey();
  const retry = retryDefaults(client.retry);
  const url = new URL(`${client.baseUrl}/pipelines/${encodeURIComponent(pipelineId)}/runs`);
  const boundary = `----fps${idempotencyKey().replaceAll("-", "")}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${asciiName(filename)}"; filename*=UTF-8''${encodeURIComponent(filename)}\r\nContent-Type: ${contentType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const headers: Record<string, string> = Object.fromEntries(client.headers({ "idempotency-key": key, "content-type": `multipart/form-data; boundary=${boundary}` }).entries());
  headers["content-length"] = String(head.byteLength + size + tail.byteLength);
  for (let attempt = 1; ; attempt++) {
    let sent = 0;
    let answer: { status: number; headers: http.IncomingHttpHeaders; body: string };
    try {
      answer = await new Promise((resolve, reject) => {
        const req = (url.protocol === "https:" ? https : http).request(url, { method: "POST", headers, signal: opts.signal });
        req.on("response", (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (body += d));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          res.on("error", reject);
        });
        req.on("error", reject);
        req.write(head);
        const count = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            sent += chunk.byteLength;
            opts.onProgress?.(sent, size);
            cb(null, chunk);
          },
        });
        pipeline(createReadStream(path, { highWaterMark: 256 * 1024 }), count, async function* (source) {
          for await (const chunk of source) yield chunk;
          yield tail;
        }, req).catch(reject);
      });
    } catch (e) {
      if (opts.signal?.aborted || attempt > retry.retries) throw opts.signal?.aborted ? e : new FpsNetworkError(`upload of ${filename}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      await sleep(backoff(attempt, retry), opts.signal);
      continue;
    }
    let body: unknown = answer.body;
    try {
      body = JSON.parse(answer.body);
    } catch {
      // kept as text
    }
    if (answer.status >= 200 && answer.status < 300) return body as PipelineRun;
    const retryAfter = retryAfterSeconds((answer.headers["retry-after"] as string | undefined) ?? null);
    if ((answer.status === 429 || answer.status === 503) && attempt <= retry.retries) {
      await sleep(backoff(attempt, retry, retryAfter), opts.signal);
      continue;
    }
    const res = new Response(null, { status: answer.status, headers: answer.headers["x-request-id"] ? { "x-request-id": String(answer.headers["x-request-id"]) } : {} });
    throw FpsError.from(res, body);
  }
}
