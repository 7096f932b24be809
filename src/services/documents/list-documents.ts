import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { FIXED_FOLDERS } from "../space-files/paths";
import { type DocumentEntry, type DocumentListing, ListDocumentsInput } from "./shapes";
import { clientPath, FOLDER_MARKER, folderKey, isProtected, nameOf, openSpace, pathOf } from "./space";

/** S3 and the local store both order keys by their UTF-8 bytes. */
const compareKeys = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * One page of a folder: the folders and objects directly inside it, in key
 * order, the folder marker hidden. Paged by cursor (the last entry's path),
 * as object stores page; there is no total. The root, `inbound` and
 * `outbound` always exist (the root lists the two even while empty); any
 * other folder that holds nothing (not even its marker) is a 404.
 */
export async function listDocuments(ctx: ServiceContext, opts: CallOptions & { input: ListDocumentsInput }): Promise<DocumentListing> {
  const input = parseInput(ListDocumentsInput, opts.input);
  const path = clientPath(input.path, "path");
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  const prefix = path === "" ? space.prefix : folderKey(space, path);
  let after: string | undefined;
  if (input.cursor !== undefined) {
    // A cursor is an entry path of this folder (a folder's ends in '/'); it only positions the listing.
    const inside = path === "" ? input.cursor : input.cursor.startsWith(`${path}/`) ? input.cursor : null;
    if (inside === null || inside === "" || inside.startsWith("/")) throw new AppError("invalid_input", "cursor: is not a cursor of this folder");
    after = `${space.prefix}${input.cursor}`;
  }
  const marker = `${prefix}${FOLDER_MARKER}`;
  const entries: (DocumentEntry & { key: string })[] = [];
  let seen = false;
  let more = false;
  for (;;) {
    const page = await ctx.storage.list(prefix, { after, limit: input.limit, delimiter: "/" });
    const batch: (DocumentEntry & { key: string })[] = [];
    for (const p of page.prefixes) {
      const entryPath = pathOf(space, p);
      batch.push({ key: p, kind: "folder", path: entryPath, name: nameOf(entryPath), protected: isProtected(space, entryPath) });
    }
    for (const o of page.objects) {
      seen = true;
      // The marker, and on S3 a `folder/` object some tools make: the folder itself, not an entry.
      if (o.key === marker || o.key === prefix) continue;
      const entryPath = pathOf(space, o.key);
      batch.push({
        key: o.key,
        kind: "object",
        path: entryPath,
        name: nameOf(entryPath),
        size: o.size,
        etag: o.etag,
        contentType: o.contentType,
        updatedAt: o.updatedAt,
        protected: isProtected(space, entryPath),
      });
    }
    if (page.prefixes.length > 0) seen = true;
    batch.sort((a, b) => compareKeys(a.key, b.key));
    entries.push(...batch);
    if (entries.length >= input.limit) {
      more = entries.length > input.limit || page.next !== null;
      entries.length = input.limit;
      break;
    }
    if (!page.next) break;
    after = page.next;
  }
  if (path === "") {
    // `inbound` and `outbound` are always there, as on the hosted SFTP server, even while they hold nothing.
    const lastKey = entries[entries.length - 1]?.key;
    for (const folder of FIXED_FOLDERS) {
      const key = folderKey(space, folder);
      if (entries.some((e) => e.key === key)) continue;
      if (input.cursor !== undefined && compareKeys(key, `${space.prefix}${input.cursor}`) <= 0) continue;
      if (more && lastKey !== undefined && compareKeys(key, lastKey) > 0) continue;
      entries.push({ key, kind: "folder", path: folder, name: folder, protected: isProtected(space, folder) });
    }
    entries.sort((a, b) => compareKeys(a.key, b.key));
    if (entries.length > input.limit) {
      entries.length = input.limit;
      more = true;
    }
  } else if (!seen && input.cursor === undefined && !FIXED_FOLDERS.includes(path)) {
    throw new AppError("not_found", `folder '${path}' not found`);
  }
  const last = entries[entries.length - 1];
  return {
    connectionId: space.connectionId,
    path,
    entries: entries.map(({ key: _key, ...e }) => e),
    nextCursor: more && last ? last.key.slice(space.prefix.length) : null,
  };
}
