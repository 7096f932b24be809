import { notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { FileLink } from "../files/shapes";
import type { CallOptions, ServiceContext } from "../context";
import { presentObject } from "./present";
import { type DocumentObject, DocumentPathInput } from "./shapes";
import { clientPath, nameOf, objectKey, openSpace } from "./space";

/** An object's metadata (size, ETag, stored content type, last change). */
export async function getDocument(ctx: ServiceContext, opts: CallOptions & { input: DocumentPathInput }): Promise<DocumentObject> {
  const input = parseInput(DocumentPathInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  const info = await ctx.storage.stat(objectKey(space, path));
  if (!info) throw notFound("object", path);
  return presentObject(space, path, info);
}

/**
 * A presigned GET link to an object, the same shape as the files API's
 * links: usable without the API key for `settings.fileLinkTtlSeconds`,
 * served as an attachment with the object's name.
 */
export async function getDownloadUrl(ctx: ServiceContext, opts: CallOptions & { input: DocumentPathInput }): Promise<FileLink> {
  const input = parseInput(DocumentPathInput, opts.input);
  const path = clientPath(input.path, "path", { root: false });
  const space = await openSpace(ctx, opts.actor, input.connectionId);
  const key = objectKey(space, path);
  const info = await ctx.storage.stat(key);
  if (!info) throw notFound("object", path);
  const filename = nameOf(path);
  const expiresIn = ctx.settings.fileLinkTtlSeconds;
  const url = await ctx.storage.presign(key, { method: "GET", expiresIn, filename, contentType: info.contentType });
  return { url, filename, expiresIn, mimetype: info.contentType };
}
