import { AppError } from "../../domain/errors";
import { RESERVED_NAME } from "../../domain/reserved";

/**
 * A connection's file space: the folder tree that the documents API browses,
 * the hosted SFTP server shows as `/` (a chroot), outbound deliveries of a
 * hosted connection are written into, and e-mail attachments are kept in.
 * Every transport builds its object keys here, so they all see the same files.
 *
 * Layout: `ws/<workspaceId>/spaces/<connectionId>/<path>` where `<path>` is a
 * normalised relative path (`inbound/orders.csv`). The two well-known folders
 * mirror the hosted server's `inboundFolder`/`outboundFolder` (`/inbound`,
 * `/outbound`, see connections/present.ts).
 */
export const INBOUND_FOLDER = "inbound";
export const OUTBOUND_FOLDER = "outbound";

const MAX_PATH_BYTES = 900; // leaves room for the prefix inside S3's 1024-byte key limit
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
const FORBIDDEN = /[\u0000-\u001f\u007f\\]/;

function id(v: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(v)) throw new AppError("invalid_input", `not a valid id for a storage key: '${String(v).slice(0, 80)}'`);
  return v;
}

/** The key prefix of a connection's space, ending in `/`. */
export function spacePrefix(workspaceId: string, connectionId: string): string {
  return `ws/${id(workspaceId)}/spaces/${id(connectionId)}/`;
}

/**
 * Normalises a client-given path inside a space to `a/b/c` (no leading or
 * trailing slash; `""` is the space root). Refused with a 400 naming `field`:
 * `..` segments, NUL/control characters, backslashes, over-long paths, and,
 * unless `allowAbsolute`, a leading `/`. `.` segments and repeated slashes are
 * dropped. SFTP passes `allowAbsolute` because its clients speak in absolute
 * paths inside the chroot; the documents API does not.
 */
export function normalizeSpacePath(input: unknown, field: string, opts: { allowAbsolute?: boolean } = {}): string {
  if (typeof input !== "string") throw invalid(field, "must be a string");
  if (FORBIDDEN.test(input)) throw invalid(field, "must not contain control characters, NUL bytes or backslashes");
  if (!opts.allowAbsolute && input.startsWith("/")) throw invalid(field, "must be relative to the connection's space (no leading '/')");
  const segments = input.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) throw invalid(field, "must not contain '..'");
  if (segments[0] === RESERVED_NAME) throw invalid(field, `must not start with the reserved '${RESERVED_NAME}' folder`);
  const path = segments.join("/");
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw invalid(field, `must be at most ${MAX_PATH_BYTES} bytes`);
  return path;
}

/** The object key of a normalised path (from `normalizeSpacePath`) inside a space. A folder path gets a trailing `/`. */
export function spaceKey(workspaceId: string, connectionId: string, path: string, opts: { folder?: boolean } = {}): string {
  const base = spacePrefix(workspaceId, connectionId);
  if (path === "") return base;
  return opts.folder ? `${base}${path}/` : `${base}${path}`;
}

/** The space-relative path of a key under `spacePrefix` (the inverse of `spaceKey`). */
export function spacePath(workspaceId: string, connectionId: string, key: string): string {
  const base = spacePrefix(workspaceId, connectionId);
  if (!key.startsWith(base)) throw new Error(`key ${key} is outside space ${base}`);
  return key.slice(base.length).replace(/\/$/, "");
}

/**
 * Names that a client uses while a file is still being written: they start
 * nothing until renamed to a final name (`.part`, `.filepart`, `.tmp`,
 * `.crdownload`, or a leading dot).
 */
export function isTemporaryName(path: string): boolean {
  const name = path.split("/").pop() ?? "";
  return name.startsWith(".") || /\.(part|filepart|tmp|crdownload)$/i.test(name);
}

/** True when `path` lies directly inside or below `folder` (both normalised). */
export function isInside(path: string, folder: string): boolean {
  return folder === "" || path === folder || path.startsWith(`${folder}/`);
}

function invalid(field: string, message: string): AppError {
  return new AppError("invalid_input", `${field}: ${message}`);
}
