import { AppError } from "../domain/errors";

/**
 * Reads a JSON request body with a size limit. The limit is checked against
 * Content-Length first and again while streaming, so a body that lies about
 * its length is cut off too.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  const tooLarge = () => new AppError("payload_too_large", `body: larger than the ${maxBytes}-byte limit for JSON requests`);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  if (!request.body) return {};
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  const text = new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(chunks));
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AppError("invalid_input", `body: malformed JSON (${(e as Error).message})`);
  }
}

export function isJsonContentType(contentType: string | null): boolean {
  if (!contentType) return true;
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json") || type === "text/plain";
}

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * GraphQL and tRPC read their own bodies; this reads one first under the
 * REST rules (content type, size limit, malformed JSON), once the caller is
 * authenticated, and hands on a request carrying the checked body.
 */
export async function boundedJsonRequest(request: Request, maxBytes: number): Promise<Request> {
  if (BODYLESS.has(request.method) || !request.body) return request;
  const contentType = request.headers.get("content-type");
  if (!isJsonContentType(contentType)) {
    throw new AppError("unsupported_media_type", `content-type: '${contentType}' is not accepted here; send application/json`);
  }
  const body = await readJsonBody(request, maxBytes);
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  headers.set("content-type", "application/json");
  return new Request(request.url, { method: request.method, headers, body: JSON.stringify(body), signal: request.signal });
}
