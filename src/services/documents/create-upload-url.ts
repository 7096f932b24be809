import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { MAX_OBJECT_BYTES, MAX_PART_BYTES, MAX_TICKET_PARTS, MIN_TICKET_PART_BYTES, MiB, type UploadTicket, UploadUrlInput } from "./shapes";
import { assertNoClash, clientName, clientPath, guardProtected, objectKey, openSpace } from "./space";

/**
 * The part size for a multipart upload of `size` bytes: at least 8 MiB
 * (DESIGN.md), a whole number of MiB, and large enough that the parts fit in
 * S3's 10,000.
 */
export function partSizeFor(size: number): number {
  const needed = Math.ceil(size / MAX_TICKET_PARTS / MiB) * MiB;
  return Math.max(MIN_TICKET_PART_BYTES, needed);
}

/**
 * An upload ticket: the server picks `single` (one presigned PUT, with the
 * headers to send) up to `settings.documentsSingleUploadMaxBytes`, else
 * `multipart` (an upload id, one presigned PUT per part, the part size); the
 * client then completes it with the parts' ETags. Nothing is written until
 * the client PUTs; a refused ticket (bad path, protected folder, clash)
 * creates nothing.
 */
export async function createUploadUrl(ctx: ServiceContext, opts: CallOptions & { input: UploadUrlInput }): Promise<UploadTicket> {
  const input = parseInput(UploadUrlInput, opts.input);
  const folder = clientPath(input.path, "path");
  const name = clientName(input.filename, "filename");
  const path = clientPath(folder === "" ? name : `${folder}/${name}`, "filename");
  const limit = Math.min(ctx.settings.maxUploadBytes, MAX_OBJECT_BYTES);
  if (input.size > limit) throw new AppError("invalid_input", `size: must be at most ${limit} bytes`);
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  guardProtected(space, path, "path", input.force);
  await assertNoClash(ctx, space, path, "path", "object");

  const key = objectKey(space, path);
  const contentType = input.contentType ?? (Bun.file(name).type || "application/octet-stream");
  const expiresIn = ctx.settings.fileLinkTtlSeconds;
  if (input.size <= ctx.settings.documentsSingleUploadMaxBytes) {
    // The declared size is bound into the link: a body of another size is refused, on the local store as by S3.
    const url = await ctx.storage.presign(key, { method: "PUT", expiresIn, contentType, size: input.size });
    return { mode: "single", path, url, headers: { "content-type": contentType }, expiresIn };
  }
  const partSize = partSizeFor(input.size);
  if (partSize > MAX_PART_BYTES) throw new AppError("invalid_input", `size: too large for ${MAX_TICKET_PARTS} parts of at most ${MAX_PART_BYTES} bytes`);
  const count = Math.max(1, Math.ceil(input.size / partSize));
  const upload = await ctx.storage.createMultipart(key, { contentType });
  const parts: { partNumber: number; url: string }[] = [];
  for (let n = 1; n <= count; n++) parts.push({ partNumber: n, url: await ctx.storage.presignPart(upload, n, expiresIn) });
  return { mode: "multipart", path, headers: {}, uploadId: upload.uploadId, parts, partSize, expiresIn };
}
