import { AppError, isAppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { isInside } from "../spaces";
import { removeFolder, removeObject } from "./delete-document";
import { type BulkDeleteItem, BulkDeleteInput, type BulkDeleteResult } from "./shapes";
import { clientPath, guardProtected, keepFolder, kindAt, openSpace, parentOf } from "./space";
import { recordStoreChange } from "../audit";

/**
 * Deletes each listed object or folder (a folder with everything in it),
 * and answers one result per path, in order: a missing or protected path is
 * reported on its own line and the others still go. A malformed path
 * refuses the whole request (400 naming `paths[i]`) before anything is deleted.
 */
export async function bulkDelete(ctx: ServiceContext, opts: CallOptions & { input: BulkDeleteInput }): Promise<BulkDeleteResult> {
  const input = parseInput(BulkDeleteInput, opts.input);
  const paths = input.paths.map((p, i) => clientPath(p, `paths[${i}]`, { root: false }));
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  const results: BulkDeleteItem[] = [];
  const parents = new Set<string>();
  for (const [i, path] of paths.entries()) {
    try {
      guardProtected(space, path, `paths[${i}]`, input.force);
      const kind = await kindAt(ctx, space, path);
      if (!kind) {
        // A folder emptied by earlier paths of this request: it would have stayed, so deleting it succeeds.
        if (![...parents].some((p) => isInside(p, path))) throw new AppError("not_found", `paths[${i}]: '${path}' not found`);
        parents.add(parentOf(path));
        results.push({ path, deleted: true, kind: "folder", objects: 0 });
        continue;
      }
      const r = kind === "object" ? await removeObject(ctx, space, path, { keep: false }) : await removeFolder(ctx, space, path, { keep: false });
      parents.add(parentOf(path));
      results.push({ path, deleted: true, kind, objects: r.objects });
    } catch (e) {
      if (!isAppError(e)) throw e;
      results.push({ path, deleted: false, objects: 0, error: { error: e.code, message: e.message } });
    }
  }
  // Folders that held the deleted paths stay, as after a single delete, unless they were deleted themselves.
  const gone = results.filter((r) => r.kind === "folder").map((r) => r.path);
  for (const parent of parents) if (!gone.some((folder) => isInside(parent, folder))) await keepFolder(ctx, space, parent);
  const deleted = results.filter((r) => r.deleted).length;
  for (const r of results) if (r.deleted) await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.delete", resourceType: "document", resourceId: `${space.connectionId}:${r.path}`, fields: [] });
  return { results, deleted, failed: results.length - deleted };
}
