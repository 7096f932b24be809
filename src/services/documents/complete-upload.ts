import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { presentObject } from "./present";
import { AbortUploadInput, CompleteUploadInput, type DocumentObject } from "./shapes";
import { assertNoClash, clientPath, guardProtected, objectKey, openSpace } from "./space";
import { recordStoreChange } from "../audit";
import { arriveIfInbound } from "./arrival";

/**
 * Completes a multipart upload: the parts listed (ascending, with the ETags
 * their PUTs answered) become the object, atomically. The upload id is bound
 * to the object's key, and so to this connection: another path or
 * connection is a 404. Completing writes the object, so a pipeline-backed
 * folder needs `force` and an admin key here as on the ticket.
 *
 * Without `uploadId` and `parts` it confirms a `single` upload already PUT
 * (404 when nothing is at the path). Either way a file completed in the
 * inbound folder arrives there, as over SFTP: its pipelines' runs start.
 */
export async function completeUpload(ctx: ServiceContext, opts: CallOptions & { input: CompleteUploadInput }): Promise<DocumentObject> {
  const input = parseInput(CompleteUploadInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  guardProtected(space, path, "path", input.force);
  await assertNoClash(ctx, space, path, "path", "object");
  const key = objectKey(space, path);
  const info = input.uploadId !== undefined ? await ctx.storage.completeMultipart({ uploadId: input.uploadId, key }, input.parts ?? []) : await ctx.storage.stat(key);
  if (!info) throw new AppError("not_found", `path: nothing was uploaded to '${path}'; PUT the file to the ticket's url first`);
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.upload", resourceType: "document", resourceId: `${space.connectionId}:${path}`, fields: input.uploadId !== undefined ? ["parts"] : [] });
  await arriveIfInbound(ctx, space, path, info);
  return presentObject(space, path, info);
}

/**
 * Abandons a multipart upload and removes its parts. `aborted: false` when
 * the id names no upload of this path (unknown, or one this store could
 * never have issued); aborting twice is harmless.
 */
export async function abortUpload(ctx: ServiceContext, opts: CallOptions & { input: AbortUploadInput }): Promise<{ aborted: boolean }> {
  const input = parseInput(AbortUploadInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  try {
    await ctx.storage.abortMultipart({ uploadId: input.uploadId, key: objectKey(space, path) });
  } catch (e) {
    if (e instanceof AppError && e.code === "not_found") return { aborted: false };
    throw e;
  }
  return { aborted: true };
}
