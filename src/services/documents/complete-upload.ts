import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { presentObject } from "./present";
import { AbortUploadInput, CompleteUploadInput, type DocumentObject } from "./shapes";
import { assertNoClash, clientPath, guardProtected, objectKey, openSpace } from "./space";
import { recordStoreChange } from "../audit";

/**
 * Completes a multipart upload: the parts listed (ascending, with the ETags
 * their PUTs answered) become the object, atomically. The upload id is bound
 * to the object's key, and so to this connection: another path or
 * connection is a 404. Completing writes the object, so a pipeline-backed
 * folder needs `force` and an admin key here as on the ticket.
 */
export async function completeUpload(ctx: ServiceContext, opts: CallOptions & { input: CompleteUploadInput }): Promise<DocumentObject> {
  const input = parseInput(CompleteUploadInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  guardProtected(space, path, "path", input.force);
  await assertNoClash(ctx, space, path, "path", "object");
  const info = await ctx.storage.completeMultipart({ uploadId: input.uploadId, key: objectKey(space, path) }, input.parts);
  await recordStoreChange(ctx, opts.actor, { workspaceId: space.workspaceId, action: "document.upload", resourceType: "document", resourceId: `${space.connectionId}:${path}`, fields: ["parts"] });
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
