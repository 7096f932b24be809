import { and, eq } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { loadConnection } from "../connections/record";
import type { Actor, ServiceContext } from "../context";
import { FOLDER_MARKER } from "../space-files/paths";
import { INBOUND_FOLDER, isInside, normalizeSpacePath, OUTBOUND_FOLDER, spaceKey, spacePath, spacePrefix } from "../spaces";

/**
 * Object stores have no folders: a folder exists when any key lies under
 * `<folder>/`, and an empty one keeps a zero-byte `<folder>/.fps-folder`
 * (FOLDER_MARKER, the same marker the hosted SFTP server makes on MKDIR).
 * Listings hide it; no client path may name it.
 */
export { FOLDER_MARKER };

export function isFolderMarker(path: string): boolean {
  return path === FOLDER_MARKER || path.endsWith(`/${FOLDER_MARKER}`);
}

/** A connection's space as one caller sees it: its keys, and which folders pipelines hold. */
export interface Space {
  workspaceId: string;
  connectionId: string;
  /** `ws/<ws>/spaces/<conn>/` */
  prefix: string;
  /** Folders a pipeline of this connection reads from (`inbound`) or writes to (`outbound`). */
  protectedFolders: string[];
  actor: Actor;
}

/** The connection must be the caller's (404 otherwise, whoever owns it). */
export async function openSpace(ctx: ServiceContext, actor: Actor, connectionId: string): Promise<Space> {
  const { row } = await loadConnection(ctx, { workspaceId: actor.workspaceId, id: connectionId });
  const p = ctx.db.t.pipelines;
  const rows = await ctx.db.read
    .selectDistinct({ direction: p.direction })
    .from(p)
    .where(and(eq(p.workspaceId, actor.workspaceId), eq(p.connectionId, row.id)));
  const protectedFolders: string[] = [];
  // Active or not: a paused pipeline still owns its folder and may be switched on again.
  if (rows.some((r) => r.direction === "inbound")) protectedFolders.push(INBOUND_FOLDER);
  if (rows.some((r) => r.direction === "outbound")) protectedFolders.push(OUTBOUND_FOLDER);
  return { workspaceId: actor.workspaceId, connectionId: row.id, prefix: spacePrefix(actor.workspaceId, row.id), protectedFolders, actor };
}

export const objectKey = (s: Space, path: string) => spaceKey(s.workspaceId, s.connectionId, path);
export const folderKey = (s: Space, path: string) => spaceKey(s.workspaceId, s.connectionId, path, { folder: true });
export const markerKey = (s: Space, path: string) => objectKey(s, path === "" ? FOLDER_MARKER : `${path}/${FOLDER_MARKER}`);
export const pathOf = (s: Space, key: string) => spacePath(s.workspaceId, s.connectionId, key);

export const nameOf = (path: string) => path.slice(path.lastIndexOf("/") + 1);
export const parentOf = (path: string) => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");

/**
 * A client-given path, normalised and confined (400 naming `field` for `..`,
 * absolute paths, NUL/control characters, backslashes...), never naming the
 * folder marker. `root: false` refuses the space root itself.
 */
export function clientPath(input: unknown, field: string, opts: { root?: boolean } = {}): string {
  const path = normalizeSpacePath(input, field);
  if (path.split("/").includes(FOLDER_MARKER)) throw new AppError("invalid_input", `${field}: '${FOLDER_MARKER}' is a reserved name`);
  if (path === "" && opts.root === false) throw new AppError("invalid_input", `${field}: must name an object or folder, not the space root`);
  return path;
}

/** One path segment: a file or folder name. */
export function clientName(input: string, field: string): string {
  if (input.includes("/")) throw new AppError("invalid_input", `${field}: must be a name without '/'`);
  const name = clientPath(input, field);
  if (name === "" || name !== input) throw new AppError("invalid_input", `${field}: must be a plain name (not empty, '.' or '..')`);
  return name;
}

/** The pipeline-backed folder `path` lies in (or is), if any. */
export function protectedFolderOf(s: Space, path: string): string | null {
  if (path === "") return null;
  return s.protectedFolders.find((f) => isInside(path, f)) ?? null;
}

/**
 * Writing into, moving or deleting a pipeline-backed folder needs `force`
 * and an admin key: without force a 409, with force but a member key a 403.
 * Called before anything is written, so a refusal changes nothing.
 */
export function guardProtected(s: Space, path: string, field: string, force: boolean): void {
  const folder = protectedFolderOf(s, path);
  if (!folder) return;
  const role = folder === INBOUND_FOLDER ? "reads its files from" : "delivers its files to";
  if (!force)
    throw new AppError(
      "conflict",
      `${field}: '${path}' is in the '${folder}' folder, which a pipeline of this connection ${role}; send force: true with an admin key to change it`,
    );
  if (s.actor.role !== "admin") throw new AppError("forbidden", `${field}: changing the pipeline-backed '${folder}' folder needs an admin key (force was given)`);
}

export const isProtected = (s: Space, path: string) => protectedFolderOf(s, path) !== null;

// ---- what is at a path ------------------------------------------------------

/** True when any object lies under `path/` (the folder exists, perhaps only as its marker). */
export async function folderExists(ctx: ServiceContext, s: Space, path: string): Promise<boolean> {
  const page = await ctx.storage.list(folderKey(s, path), { limit: 1 });
  return page.objects.length > 0 || page.prefixes.length > 0;
}

export async function objectExists(ctx: ServiceContext, s: Space, path: string): Promise<boolean> {
  return (await ctx.storage.stat(objectKey(s, path))) !== null;
}

/**
 * A key cannot be both an object and a folder. The local store refuses that
 * itself (409); S3 would allow it, so the service checks on both: no object
 * may sit where a folder is, nor under one of its own ancestors.
 */
export async function assertNoClash(ctx: ServiceContext, s: Space, path: string, field: string, as: "object" | "folder"): Promise<void> {
  const segments = path.split("/");
  for (let i = 1; i < segments.length; i++) {
    const ancestor = segments.slice(0, i).join("/");
    if (await objectExists(ctx, s, ancestor)) throw new AppError("conflict", `${field}: '${ancestor}' is a file, so '${path}' cannot be made inside it`);
  }
  if (as === "object" && (await folderExists(ctx, s, path))) throw new AppError("conflict", `${field}: '${path}' is a folder`);
  if (as === "folder" && (await objectExists(ctx, s, path))) throw new AppError("conflict", `${field}: '${path}' is a file`);
}

/** What is at `path`: an object, else a folder, else nothing. */
export async function kindAt(ctx: ServiceContext, s: Space, path: string): Promise<"object" | "folder" | null> {
  if (await objectExists(ctx, s, path)) return "object";
  if (await folderExists(ctx, s, path)) return "folder";
  return null;
}

/**
 * Deleting or moving away a folder's last object would make the folder
 * vanish (it exists only through its keys); as on a disk, it stays, as its marker.
 */
export async function keepFolder(ctx: ServiceContext, s: Space, path: string): Promise<void> {
  if (path === "" || (await folderExists(ctx, s, path))) return;
  try {
    await ctx.storage.put(markerKey(s, path), new Uint8Array(0), { contentType: "application/x-directory" });
  } catch (e) {
    // A file of that name took the folder's place meanwhile: nothing to keep.
    if (!(e instanceof AppError && e.code === "conflict")) throw e;
  }
}

/** Every key under a folder, a page at a time (the marker included). */
export async function* keysUnder(ctx: ServiceContext, s: Space, path: string): AsyncGenerator<string> {
  const prefix = path === "" ? s.prefix : folderKey(s, path);
  let after: string | undefined;
  for (;;) {
    const page = await ctx.storage.list(prefix, { after, limit: 1000 });
    for (const o of page.objects) yield o.key;
    if (!page.next) return;
    after = page.next;
  }
}
