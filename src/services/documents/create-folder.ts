import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { CreateFolderInput, type DocumentFolder } from "./shapes";
import { assertNoClash, clientPath, folderExists, guardProtected, isProtected, markerKey, openSpace } from "./space";
import { recordStoreChange } from "../audit";

/**
 * Makes a folder (and its parents, which exist through it). An existing
 * folder is left as it is (`created: false`); a file at the path or at one
 * of its parents is a 409.
 */
export async function createFolder(ctx: ServiceContext, opts: CallOptions & { input: CreateFolderInput }): Promise<DocumentFolder> {
  const input = parseInput(CreateFolderInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  guardProtected(space, path, "path", input.force);
  await assertNoClash(ctx, space, path, "path", "folder");
  if (await folderExists(ctx, space, path)) return { path, created: false, protected: isProtected(space, path) };
  await ctx.storage.put(markerKey(space, path), new Uint8Array(0), { contentType: "application/x-directory" });
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.createFolder", resourceType: "document", resourceId: `${space.connectionId}:${path}`, fields: ["path"] });
  return { path, created: true, protected: isProtected(space, path) };
}
