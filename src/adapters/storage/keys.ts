import { AppError } from "../../domain/errors";
import { RESERVED_NAME } from "../../domain/reserved";

/**
 * Object keys: `/`-separated, no leading slash, no empty, `.` or `..`
 * segments, no NUL or control characters, no backslashes (a Windows client's
 * separator would otherwise smuggle `..\..` through), at most 1024 bytes as S3
 * allows. The first segment `.fps` is reserved for the local store's own
 * bookkeeping (temp files, multipart parts, metadata).
 */
const MAX_KEY_BYTES = 1024;
export const RESERVED_SEGMENT = RESERVED_NAME;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
const FORBIDDEN = /[\u0000-\u001f\u007f\\]/;

function problem(value: string, what: "key" | "prefix"): string | null {
  if (typeof value !== "string") return `${what} must be a string`;
  if (what === "key" && value.length === 0) return "key must not be empty";
  if (Buffer.byteLength(value) > MAX_KEY_BYTES) return `${what} must be at most ${MAX_KEY_BYTES} bytes`;
  if (FORBIDDEN.test(value)) return `${what} must not contain control characters or backslashes`;
  if (value.startsWith("/")) return `${what} must be relative (no leading '/')`;
  const segments = value.split("/");
  // A prefix may end in '/' (a folder) or in a partial segment; a key may not end in '/'.
  const checked = what === "prefix" && segments[segments.length - 1] === "" ? segments.slice(0, -1) : segments;
  for (const s of checked) {
    if (s === "") return `${what} must not contain empty segments ('//')`;
    if (s === "." || s === "..") return `${what} must not contain '.' or '..' segments`;
  }
  if (segments[0] === RESERVED_SEGMENT) return `${what} must not start with the reserved '${RESERVED_SEGMENT}/'`;
  return null;
}

export function assertKey(key: string): void {
  const p = problem(key, "key");
  if (p) throw new AppError("invalid_input", `${p}: '${printable(key)}'`);
}

export function assertPrefix(prefix: string): void {
  if (prefix === "") return;
  const p = problem(prefix, "prefix");
  if (p) throw new AppError("invalid_input", `${p}: '${printable(prefix)}'`);
}

const printable = (v: unknown) => String(v).replace(/[\u0000-\u001f\u007f]/g, "?").slice(0, 200);

/**
 * A user-supplied file name made safe to use as one key segment: the last
 * path component only, control characters and separators dropped, never
 * empty, `.` or `..`, at most 200 characters (keeping the extension).
 */
export function safeFilename(name: string, fallback = "file"): string {
  const base = (name.split(/[\\/]/).pop() ?? "").replace(/[\u0000-\u001f\u007f]/g, "").trim();
  let safe = base.replace(/^\.+/, "") || fallback;
  if (safe.length > 200) {
    const dot = safe.lastIndexOf(".");
    const ext = dot > 0 && safe.length - dot <= 16 ? safe.slice(dot) : "";
    safe = safe.slice(0, 200 - ext.length) + ext;
  }
  return safe;
}

/** Where a pipeline run's files live, beside each other. */
export function runKeys(workspaceId: string, runId: string, filename: string, opts: { processedExtension?: string } = {}) {
  const base = `ws/${segment(workspaceId)}/runs/${segment(runId)}`;
  const ext = (opts.processedExtension ?? "json").replace(/^\./, "");
  return {
    /** Everything of this run: `deletePrefix(runKeys(...).prefix)` removes it. */
    prefix: `${base}/`,
    original: `${base}/original/${safeFilename(filename)}`,
    processed: `${base}/processed.${ext}`,
    rejects: `${base}/rejects.json`,
  };
}

function segment(id: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new AppError("invalid_input", `not a valid id for a storage key: '${printable(id)}'`);
  return id;
}
