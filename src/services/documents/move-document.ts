import { AppError, notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { isInside } from "../spaces";
import { MoveDocumentInput, type MoveDocumentResult, RenameDocumentInput } from "./shapes";
import {
  assertNoClash,
  clientName,
  clientPath,
  folderKey,
  guardProtected,
  isFolderMarker,
  keepFolder,
  keysUnder,
  kindAt,
  objectKey,
  openSpace,
  parentOf,
  type Space,
} from "./space";
import { recordStoreChange } from "../audit";
import { isArrivalPath } from "../space-files/paths";
import { arriveIfInbound } from "./arrival";

/**
 * Moves an object or a folder (with everything in it) to a new path, which
 * must not exist yet; its parents are made as needed and the old parent
 * folder stays. Both ends count as writes: a pipeline-backed folder on either
 * side needs `force` and an admin key. A folder moves object by object (an
 * object store has no rename of a prefix): each object is moved whole, and a
 * move cut short can be finished by moving the rest again (see
 * docs/decisions/documents.md).
 */
export async function moveDocument(ctx: ServiceContext, opts: CallOptions & { input: MoveDocumentInput }): Promise<MoveDocumentResult> {
  const input = parseInput(MoveDocumentInput, opts.input);
  const from = clientPath(input.from, "from", { root: false });
  const to = clientPath(input.to, "to", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  const moved = await move(ctx, space, { from, to, force: input.force, fromField: "from", toField: "to" });
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.move", resourceType: "document", resourceId: `${space.connectionId}:${from}`, fields: ["to"] });
  return moved;
}

/** A move within the same folder: `name` is the new last segment. */
export async function renameDocument(ctx: ServiceContext, opts: CallOptions & { input: RenameDocumentInput }): Promise<MoveDocumentResult> {
  const input = parseInput(RenameDocumentInput, opts.input);
  const from = clientPath(input.path, "path", { root: false });
  const name = clientName(input.name, "name");
  const parent = parentOf(from);
  const to = clientPath(parent === "" ? name : `${parent}/${name}`, "name");
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  const moved = await move(ctx, space, { from, to, force: input.force, fromField: "path", toField: "name" });
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.rename", resourceType: "document", resourceId: `${space.connectionId}:${from}`, fields: ["name"] });
  return moved;
}

async function move(
  ctx: ServiceContext,
  space: Space,
  m: { from: string; to: string; force: boolean; fromField: string; toField: string },
): Promise<MoveDocumentResult> {
  const { from, to } = m;
  guardProtected(space, from, m.fromField, m.force);
  guardProtected(space, to, m.toField, m.force);
  if (from === to) throw new AppError("invalid_input", `${m.toField}: is the same path as ${m.fromField}`);
  const kind = await kindAt(ctx, space, from);
  if (!kind) throw notFound("object or folder", from);
  if (kind === "folder" && isInside(to, from)) throw new AppError("invalid_input", `${m.toField}: a folder cannot be moved into itself`);
  if (await kindAt(ctx, space, to)) throw new AppError("conflict", `${m.toField}: '${to}' exists already`);
  await assertNoClash(ctx, space, to, m.toField, kind);

  let objects = 0;
  // A file moved into the inbound folder from outside it arrives there (as an SFTP rename does).
  const arrive = async (path: string, oldPath: string) => {
    if (isFolderMarker(path) || !isArrivalPath(path) || isArrivalPath(oldPath)) return;
    const info = await ctx.storage.stat(objectKey(space, path));
    if (info) await arriveIfInbound(ctx, space, path, info, { from: oldPath });
  };
  if (kind === "object") {
    await ctx.storage.move(objectKey(space, from), objectKey(space, to));
    objects = 1;
    await arrive(to, from);
  } else {
    const source = folderKey(space, from);
    const target = folderKey(space, to);
    for await (const key of keysUnder(ctx, space, from)) {
      const rest = key.slice(source.length);
      await ctx.storage.move(key, target + rest);
      objects++;
      await arrive(`${to}/${rest}`, `${from}/${rest}`);
    }
  }
  await keepFolder(ctx, space, parentOf(from));
  return { kind, from, to, objects };
}
