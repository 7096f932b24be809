import { AppError } from "../../domain/errors";
import { RESERVED_NAME } from "../../domain/reserved";
import { INBOUND_FOLDER, isInside, isTemporaryName, normalizeSpacePath, OUTBOUND_FOLDER } from "../spaces";

/**
 * An empty object that keeps a folder when it holds nothing else (an object
 * store has no folders, only keys): made by MKDIR, and left behind when a
 * folder's last file is removed or renamed away, as the documents API does
 * (the same name as src/services/documents/space.ts, which shows the same
 * space). Hidden from listings; clients cannot name it.
 */
export const FOLDER_MARKER = `${RESERVED_NAME}-folder`;

/** Folders every space shows, whether or not they hold anything; they cannot be removed or renamed. */
export const FIXED_FOLDERS: readonly string[] = [INBOUND_FOLDER, OUTBOUND_FOLDER];

/**
 * A client's path inside the chroot as a normalised space path (`""` is the
 * root). Relative paths are taken from the root (the session's home). `..`
 * is resolved here, lexically; a path that climbs above the root, or that
 * the space refuses (control characters, the reserved `.fps` folder, the
 * folder marker), is `forbidden`: the client sees permission denied.
 */
export function resolveClientPath(input: string): string {
  const out: string[] = [];
  for (const segment of input.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (out.length === 0) throw new AppError("forbidden", `'${printable(input)}' leaves your folder`);
      out.pop();
    } else out.push(segment);
  }
  let path: string;
  try {
    path = normalizeSpacePath(out.join("/"), "path", { allowAbsolute: true });
  } catch (e) {
    throw new AppError("forbidden", e instanceof AppError ? e.message : `'${printable(input)}' is not allowed`);
  }
  if (path.split("/").includes(FOLDER_MARKER)) throw new AppError("forbidden", `'${FOLDER_MARKER}' is reserved`);
  return path;
}

/** The absolute client path of a space path. */
export function clientPath(path: string): string {
  return `/${path}`;
}

export function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** A file at this path is something a partner sent: inside the inbound folder, under a final (not temporary) name. */
export function isArrivalPath(path: string): boolean {
  return isInside(path, INBOUND_FOLDER) && path !== INBOUND_FOLDER && !isTemporaryName(path);
}

const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
