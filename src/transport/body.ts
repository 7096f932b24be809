import { AppError } from "../domain/errors";

/**
 * Objects and arrays nested deeper than this are refused before the body is
 * parsed. Bun's JSON.parse accepts far deeper text, but what follows it (zod,
 * JSON.stringify when a row is stored, graphql-js's variable coercion)
 * recurses and overflows the stack, which would end as an internal error.
 * No request of this API comes close: a JSON Schema definition 30 levels deep
 * is still within it.
 */
export const MAX_JSON_DEPTH = 64;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads the body's bytes, refusing it once it passes the limit (declared or actual). */
async function readBytes(request: Request, maxBytes: number): Promise<Uint8Array | null> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  const tooLarge = () => new AppError("payload_too_large", `body: larger than the ${maxBytes}-byte limit for JSON requests`);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  if (!request.body) return null;
  if (Number.isFinite(declared)) {
    // The length is declared and within the limit; HTTP framing holds the body to it, so read it at once.
    const bytes = await request.bytes();
    if (bytes.byteLength > maxBytes) throw tooLarge();
    return bytes;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * The checks every JSON body passes, on every surface, before anything reads
 * it: UTF-8 (RFC 8259; a lenient decode would store U+FFFD in place of what
 * the client sent), nesting within MAX_JSON_DEPTH, well-formed JSON, and no
 * `__proto__` member (code that copies members by assignment would turn it
 * into the object's prototype). Answers the text (empty: no body) and its value.
 */
export function checkJsonText(bytes: Uint8Array | null): { text: string; value: unknown } {
  if (!bytes || bytes.byteLength === 0) return { text: "", value: {} };
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new AppError("invalid_input", "body: is not valid UTF-8");
  }
  if (text.trim() === "") return { text: "", value: {} };
  if (text.length > MAX_JSON_DEPTH && nestedTooDeep(text, MAX_JSON_DEPTH)) {
    throw new AppError("invalid_input", `body: nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new AppError("invalid_input", `body: malformed JSON (${(e as Error).message})`);
  }
  // Escapes can spell `__proto__`, a NUL or half a surrogate pair; without one, only the plain name needs a look.
  const escapes = text.includes("\\u");
  if (escapes || text.includes("__proto__")) {
    const problem = unacceptable(value, escapes);
    if (problem) throw new AppError("invalid_input", `body: ${problem}`);
  }
  return { text, value };
}

/**
 * Reads a JSON request body with a size limit. The limit is checked against
 * Content-Length first and again while streaming, so a body that lies about
 * its length is cut off too. An empty body reads as `{}`.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  return checkJsonText(await readBytes(request, maxBytes)).value;
}

export function isJsonContentType(contentType: string | null): boolean {
  if (!contentType) return true;
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json") || type === "text/plain";
}

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * For transports that read their own request: the body read and checked
 * under the REST rules (content type, size limit, UTF-8, depth, malformed
 * JSON), once the caller is authenticated. Null when the method carries no
 * body or none was sent.
 */
export async function readCheckedBody(request: Request, maxBytes: number): Promise<{ text: string; value: unknown } | null> {
  if (BODYLESS.has(request.method)) return null;
  const contentType = request.headers.get("content-type");
  if (!isJsonContentType(contentType)) {
    throw new AppError("unsupported_media_type", `content-type: '${contentType}' is not accepted here; send application/json`);
  }
  if (!request.body) return null;
  return checkJsonText(await readBytes(request, maxBytes));
}

/**
 * GraphQL and tRPC read their own bodies; this reads one first under the
 * REST rules (content type, size limit, UTF-8, depth, malformed JSON), once
 * the caller is authenticated, and hands on a request carrying the checked
 * text, so that a body REST refuses never reaches them.
 */
export async function boundedJsonRequest(request: Request, maxBytes: number): Promise<Request> {
  const body = await readCheckedBody(request, maxBytes);
  if (!body) return request;
  const { text } = body;
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  headers.set("content-type", "application/json");
  return new Request(request.url, { method: request.method, headers, body: text === "" ? "{}" : text, signal: request.signal });
}

/** Whether `text` opens more than `limit` objects/arrays at once; strings are skipped, so brackets inside them do not count. */
function nestedTooDeep(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: the next character is escaped
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > limit) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/**
 * Text that no store keeps as sent: Postgres refuses NUL in text and jsonb
 * and an unpaired surrogate in jsonb, and UTF-8 cannot carry a lone
 * surrogate at all. Refused alike on every surface and database.
 */
export function isStorableString(s: string): boolean {
  return !s.includes("\0") && s.isWellFormed();
}

const UNSTORABLE = "contains a NUL character or an unpaired surrogate (\\u0000, \\uD800-\\uDFFF), which cannot be stored";

/** Depth is bounded by MAX_JSON_DEPTH already, so plain recursion is safe here. */
function unacceptable(value: unknown, checkStrings: boolean): string | null {
  if (typeof value === "string") return checkStrings && !isStorableString(value) ? UNSTORABLE : null;
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value)) {
    for (const v of value) {
      const p = unacceptable(v, checkStrings);
      if (p) return p;
    }
    return null;
  }
  if (Object.hasOwn(value, "__proto__")) return "a member named '__proto__' is not accepted";
  for (const [k, v] of Object.entries(value)) {
    if (checkStrings && !isStorableString(k)) return UNSTORABLE;
    const p = unacceptable(v, checkStrings);
    if (p) return p;
  }
  return null;
}
