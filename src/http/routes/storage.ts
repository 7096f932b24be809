import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import { limited } from "../../adapters/storage/body";
import { attachment } from "../../adapters/storage/disposition";
import { LINK_PATH, LocalObjectStore } from "../../adapters/storage/local";
import type { ServiceContext } from "../../services/context";

/**
 * The local object store's presigned links, served by the service the way S3
 * serves its own: no API key, the signature is the permission. GET downloads
 * (with Range), PUT uploads a whole object or, with `uploadId` and
 * `partNumber`, one part of a multipart upload, answering its `ETag`.
 * With S3 configured the links point at the bucket and these routes answer 404.
 */
export function storageRoutes(svc: ServiceContext) {
  const store = () => {
    if (svc.storage.kind !== "local" || !(svc.storage instanceof LocalObjectStore)) throw new AppError("not_found", "no local object store on this service");
    return svc.storage;
  };
  return new Elysia({ name: "routes:storage" })
    .get(`${LINK_PATH}*`, ({ request }) => download(store(), request), { parse: "none", detail: { hide: true } })
    .put(`${LINK_PATH}*`, ({ request }) => upload(store(), request, svc.settings.maxUploadBytes), { parse: "none", detail: { hide: true } });
}

/** The key from the raw path (each segment percent-decoded) and the query. */
function target(request: Request): { key: string; query: URLSearchParams } {
  const url = new URL(request.url);
  let key: string;
  try {
    key = url.pathname.slice(LINK_PATH.length).split("/").map(decodeURIComponent).join("/");
  } catch {
    throw new AppError("forbidden", "link refused: the signature does not match (altered, or used with another method)");
  }
  return { key, query: url.searchParams };
}

async function download(store: LocalObjectStore, request: Request): Promise<Response> {
  const { key, query } = target(request);
  const claims = store.verifyLink(request.method, key, query);
  // Served natively from a pinned version (sendfile, no JavaScript chunks: streaming a large object through
  // JavaScript grew the service's memory by its chunk garbage); streamed with `get` where pinning is not possible.
  const pinned = await store.pin(key);
  const info = pinned?.info ?? (await store.stat(key));
  if (!info) throw new AppError("not_found", `object '${key}' not found`);
  const headers = new Headers({
    "content-type": claims.contentType ?? info.contentType,
    etag: `"${info.etag}"`,
    "last-modified": info.updatedAt.toUTCString(),
    "accept-ranges": "bytes",
    "cache-control": "private, no-store",
  });
  if (claims.filename) headers.set("content-disposition", attachment(claims.filename));
  const range = parseRange(request.headers.get("range"), info.size);
  if (range === "unsatisfiable") {
    headers.set("content-range", `bytes */${info.size}`);
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify({ message: `range: not satisfiable for an object of ${info.size} bytes`, statusCode: 416, error: "invalid_input" }), {
      status: 416,
      headers,
    });
  }
  const file = pinned ? Bun.file(pinned.path) : null;
  const body = file ? (range ? file.slice(range.start, range.end + 1) : file) : await store.get(key, range ? { range } : {});
  if (!body) throw new AppError("not_found", `object '${key}' not found`);
  if (range) {
    headers.set("content-range", `bytes ${range.start}-${range.end}/${info.size}`);
    headers.set("content-length", String(range.end - range.start + 1));
    return new Response(body, { status: 206, headers });
  }
  headers.set("content-length", String(info.size));
  return new Response(body, { status: 200, headers });
}

async function upload(store: LocalObjectStore, request: Request, maxBytes: number): Promise<Response> {
  const { key, query } = target(request);
  const claims = store.verifyLink(request.method, key, query);
  const sentType = request.headers.get("content-type") ?? undefined;
  // A content type bound into the link is part of what was signed, as with S3's signed headers.
  if (claims.contentType && normaliseType(sentType) !== normaliseType(claims.contentType))
    throw new AppError("forbidden", `link refused: it requires content-type '${claims.contentType}'`);
  const header = request.headers.get("content-length");
  const declared = Number(header ?? "0");
  if (declared > maxBytes) throw new AppError("payload_too_large", `body: larger than ${maxBytes} bytes`);
  // A link signed for a size takes a body of exactly that size, as S3 holds a signed content-length (nothing is read otherwise).
  if (claims.size !== undefined) {
    if (header === null) throw new AppError("invalid_input", `content-length: required; this link is signed for a body of ${claims.size} bytes`);
    if (declared > claims.size) throw new AppError("payload_too_large", `body: ${declared} bytes announced; this link is signed for ${claims.size} bytes`);
    if (declared !== claims.size) throw new AppError("invalid_input", `body: ${declared} bytes announced; this link is signed for exactly ${claims.size} bytes`);
  }
  const part = claims.uploadId !== undefined && claims.partNumber !== undefined ? { upload: { uploadId: claims.uploadId, key }, partNumber: claims.partNumber } : null;
  const contentType = sentType ?? claims.contentType;
  let etag: string;
  if (header !== null && /^\d+$/.test(header.trim()) && request.body) {
    // A body of announced length (HTTP framing holds it to that length) is written in native code: its bytes
    // never become JavaScript chunks, which on a busy heap grew the service's memory with every large upload.
    etag = part
      ? (await store.putPartRequest(part.upload, part.partNumber, request, declared)).etag
      : (await store.putRequest(key, request, { length: declared, contentType })).etag;
  } else {
    // Chunked or unknown length: counted while reading.
    const body = limited(request.body ?? emptyBody(), maxBytes, () => new AppError("payload_too_large", `body: larger than ${maxBytes} bytes`));
    etag = part ? (await store.putPart(part.upload, part.partNumber, body)).etag : (await store.put(key, body, { contentType })).etag;
  }
  return new Response(null, { status: 200, headers: { etag: `"${etag}"` } });
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

const normaliseType = (t: string | undefined) => (t ?? "").split(";")[0]!.trim().toLowerCase();

/** One `bytes=` range (several ranges are answered whole, as RFC 9110 allows). */
function parseRange(header: string | null, size: number): { start: number; end: number } | "unsatisfiable" | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  let start: number;
  let end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== "" && Number(m[2]) < start) return null;
  }
  if (start >= size) return "unsatisfiable";
  return { start, end };
}
