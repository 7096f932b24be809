import { notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { DeleteDocumentInput, type DeleteDocumentResult } from "./shapes";
import { clientPath, folderKey, guardProtected, keepFolder, objectExists, objectKey, openSpace, parentOf, type Space } from "./space";
import { recordStoreChange } from "../audit";

/** Deletes one object (404 when there is none); its folder stays. */
export async function deleteDocument(ctx: ServiceContext, opts: CallOptions & { input: DeleteDocumentInput }): Promise<DeleteDocumentResult> {
  const input = parseInput(DeleteDocumentInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  guardProtected(space, path, "path", input.force);
  if (!(await objectExists(ctx, space, path))) throw notFound("object", path);
  const removed = await removeObject(ctx, space, path);
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.delete", resourceType: "document", resourceId: `${space.connectionId}:${path}`, fields: [] });
  return removed;
}

/** Deletes a folder and everything in it (404 when there is no such folder); its parent stays. */
export async function deleteFolder(ctx: ServiceContext, opts: CallOptions & { input: DeleteDocumentInput }): Promise<DeleteDocumentResult> {
  const input = parseInput(DeleteDocumentInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  guardProtected(space, path, "path", input.force);
  const result = await removeFolder(ctx, space, path);
  if (result.objects === 0) throw notFound("folder", path);
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.deleteFolder", resourceType: "document", resourceId: `${space.connectionId}:${path}`, fields: [] });
  return result;
}

/** `keep: false` leaves keeping the parent folder to the caller (bulk delete does it once per folder). */
export async function removeObject(ctx: ServiceContext, space: Space, path: string, opts: { keep?: boolean } = {}): Promise<DeleteDocumentResult> {
  await ctx.storage.delete(objectKey(space, path));
  if (opts.keep !== false) await keepFolder(ctx, space, parentOf(path));
  return { kind: "object", path, objects: 1 };
}

export async function removeFolder(ctx: ServiceContext, space: Space, path: string, opts: { keep?: boolean } = {}): Promise<DeleteDocumentResult> {
  const objects = await ctx.storage.deletePrefix(folderKey(space, path));
  if (objects > 0 && opts.keep !== false) await keepFolder(ctx, space, parentOf(path));
  return { kind: "folder", path, objects };
}
