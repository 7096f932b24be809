import { randomUUID } from "node:crypto";
import { link as hardLink, mkdir, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { AppError } from "../../../domain/errors";
import type { ObjectInfo, PresignOptions } from "../port";
import { type LinkClaims, sign, signatureMatches } from "../signing";
import { type AtomicFiles, isMissing } from "./files";

/** Where the service serves the local store's links (src/http/routes/storage.ts). */
export const LINK_PATH = "/storage/o/";

/** Each key segment percent-encoded, slashes kept, so the URL path reads like the key. */
export function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}


/** How long a pinned version (see `pin`) keeps its private name. */
const PIN_HOLD_MS = 10 * 60_000;

/**
 * Signed links to the local store, served by the service itself: each binds
 * its method, key, expiry and what else it limits (filename, content type,
 * size, a multipart upload's part) under an HMAC with the store's key.
 */
export class LocalLinks {
  constructor(
    private readonly signingKey: Buffer,
    private readonly publicUrl: string,
    private readonly now: () => number,
  ) {}

  link(key: string, claims: LinkClaims): string {
    const q = new URLSearchParams();
    if (claims.uploadId) q.set("uploadId", claims.uploadId);
    if (claims.partNumber !== undefined) q.set("partNumber", String(claims.partNumber));
    if (claims.filename) q.set("filename", claims.filename);
    if (claims.contentType) q.set("type", claims.contentType);
    if (claims.size !== undefined) q.set("size", String(claims.size));
    q.set("expires", String(claims.expires));
    q.set("sig", sign(this.signingKey, claims));
    return `${this.publicUrl}${LINK_PATH}${encodeKey(key)}?${q}`;
  }

  expiry(expiresIn: number): number {
    if (!Number.isInteger(expiresIn) || expiresIn < 1) throw new AppError("invalid_input", "expiresIn: must be a whole number of seconds, at least 1");
    return Math.floor(this.now() / 1000) + expiresIn;
  }

  presign(key: string, opts: PresignOptions): string {
    const claims: LinkClaims = {
      method: opts.method,
      key,
      expires: this.expiry(opts.expiresIn),
      filename: opts.method === "GET" ? opts.filename : undefined,
      contentType: opts.contentType,
      size: opts.method === "PUT" ? opts.size : undefined,
    };
    return this.link(key, claims);
  }

  /**
   * Checks a link presented to the service: the signature over everything it
   * binds, the method it is used with, and its expiry. Throws `forbidden`
   * (403) otherwise; the route has then read and written nothing.
   */
  verifyLink(method: string, key: string, query: URLSearchParams): LinkClaims {
    const refuse = (why: string) => new AppError("forbidden", `link refused: ${why}`);
    const expires = Number(query.get("expires"));
    const sig = query.get("sig");
    if (!sig || !Number.isInteger(expires)) throw refuse("it is not signed");
    const part = query.get("partNumber");
    const size = query.get("size");
    const claims: LinkClaims = {
      method: method === "GET" || method === "HEAD" ? "GET" : method === "PUT" ? "PUT" : (method as "GET"),
      key,
      expires,
      filename: query.get("filename") ?? undefined,
      contentType: query.get("type") ?? undefined,
      uploadId: query.get("uploadId") ?? undefined,
      partNumber: part === null ? undefined : Number(part),
      size: size === null ? undefined : Number(size),
    };
    if (!signatureMatches(this.signingKey, claims, sig)) throw refuse("the signature does not match (altered, or used with another method)");
    if (Math.floor(this.now() / 1000) > expires) throw refuse("it has expired");
    return claims;
  }
}

/**
 * Pins an object's current version for serving it natively by path (the GET
 * link route): a hard link under `.fps/pins` to the same inode, so a new
 * version landing on the key meanwhile cannot change what is sent, and the
 * metadata returned is that of the pinned bytes. The pin is unlinked after
 * `holdMs` (the server opened it long before; an open file outlives its
 * names) or by `sweep` after a crash. null: no object at the key, or a file
 * system without hard links (the caller then streams with `get`).
 */
export async function pin(files: AtomicFiles, key: string, holdMs = PIN_HOLD_MS): Promise<{ path: string; info: ObjectInfo } | null> {
  const path = files.objectPath(key);
  const pinned = join(files.sys, "pins", randomUUID());
  await mkdir(dirname(pinned), { recursive: true });
  try {
    await hardLink(path, pinned);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (isMissing(e) || code === "EISDIR" || code === "EPERM" || code === "EXDEV" || code === "ENOTSUP" || code === "EMLINK") return null;
    throw e;
  }
  try {
    const st = await stat(pinned);
    if (!st.isFile()) throw new AppError("not_found", `object '${key}' not found`);
    const meta = await files.readMeta(key, pinned, st);
    setTimeout(() => void rm(pinned, { force: true }), holdMs).unref();
    return { path: pinned, info: { key, size: st.size, etag: meta.etag, contentType: meta.contentType, updatedAt: st.mtime } };
  } catch (e) {
    await rm(pinned, { force: true });
    throw e;
  }
}
