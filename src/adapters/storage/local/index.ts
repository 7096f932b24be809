import { mkdirSync } from "node:fs";
import { copyFile, type FileHandle, mkdir, open, readdir, rm, rmdir, stat, unlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { AppError } from "../../../domain/errors";
import { assertPrefix, RESERVED_SEGMENT } from "../keys";
import type { Body, CompletedPart, FileStore, MultipartUpload, ObjectInfo, ObjectStore, PresignOptions, StorageConfig, WriteObserver } from "../port";
import type { LinkClaims } from "../signing";
import { AtomicFiles, isMissing, renameInto, statFile, streamFile, syncDir } from "./files";
import { LocalLinks, pin } from "./links";
import { LocalMultipart } from "./multipart";

export { encodeKey, LINK_PATH } from "./links";
export { MAX_PARTS, MIN_PART_BYTES } from "./multipart";

const LIST_MAX = 1000;

export interface LocalStoreOptions {
  /** Milliseconds since the epoch; links expire by it. Tests move it. */
  now?: () => number;
}

type LocalConfig = Extract<StorageConfig, { kind: "local" }>;

/**
 * Objects as plain files under `root/<key>`; the store's own files under
 * `root/.fps/` (tmp: uploads in progress; meta: etag and content type;
 * uploads: multipart parts; pins: versions being served by GET links).
 * Every write is atomic (./files.ts): a reader sees the old object or the
 * new one, never part of one. Links and pins: ./links.ts; multipart
 * uploads: ./multipart.ts.
 */
export class LocalObjectStore implements ObjectStore {
  readonly kind = "local" as const;
  readonly root: string;
  /** Files written leave the page cache once they are on disk (src/adapters/storage/page-cache.ts). */
  readonly dropWritten: boolean;
  private readonly disk: AtomicFiles;
  private readonly links: LocalLinks;
  private readonly multipart: LocalMultipart;
  private readonly now: () => number;

  constructor(cfg: LocalConfig, opts: LocalStoreOptions = {}) {
    this.root = resolve(cfg.root);
    this.dropWritten = cfg.dropWritten ?? false;
    this.disk = new AtomicFiles(this.root, join(this.root, RESERVED_SEGMENT), this.dropWritten);
    const signingKey = Buffer.from(cfg.signingKey, "base64");
    if (signingKey.length < 32) throw new Error("storage: the local store needs a signing key of at least 32 bytes");
    this.now = opts.now ?? Date.now;
    this.links = new LocalLinks(signingKey, cfg.publicUrl.replace(/\/+$/, ""), this.now);
    this.multipart = new LocalMultipart(this.disk, this.links);
  }

  /** Writers that make their own files (the engine's workers) write them in the temp folder and `putFile` them. */
  get files(): FileStore {
    const store = this;
    return {
      get dropWritten() {
        return store.dropWritten;
      },
      tempPath: () => {
        mkdirSync(join(this.disk.sys, "tmp"), { recursive: true });
        return this.disk.tmpPath();
      },
      putFile: (key, path, opts) => this.putFile(key, path, opts),
    };
  }

  // ---- writing -------------------------------------------------------------

  async put(key: string, body: Body, opts: { contentType?: string } = {}): Promise<ObjectInfo> {
    this.disk.objectPath(key);
    const { tmp, md5 } = await this.disk.writeTemp(body, { md5: true });
    return this.disk.commit(tmp, key, { etag: md5!, contentType: opts.contentType });
  }

  /** `put` without hashing while writing (the etag is computed when first asked for, as for putFile), telling `observe` where the bytes go. */
  async putArriving(key: string, body: Body, opts: { contentType?: string; observe?: WriteObserver } = {}): Promise<Omit<ObjectInfo, "etag">> {
    this.disk.objectPath(key);
    const { tmp } = await this.disk.writeTemp(body, { md5: false, observe: opts.observe });
    return this.disk.commit(tmp, key, { etag: undefined, contentType: opts.contentType });
  }

  /**
   * `put` of a file the caller wrote in the store's temp folder (`.fps/tmp`,
   * the same file system as the objects): the engine's outputs, written on
   * worker threads. The file is fsynced and renamed into place (it is gone
   * from `path` after). Its etag, the md5 of its bytes, is computed when
   * first asked for (`stat`, a listing, a GET link), not here, so a run does
   * not wait for the hash of its output (docs/decisions/engine.md, "Output").
   */
  async putFile(key: string, path: string, opts: { contentType?: string } = {}): Promise<Omit<ObjectInfo, "etag">> {
    this.disk.objectPath(key);
    if (dirname(resolve(path)) !== join(this.disk.sys, "tmp")) throw new Error(`putFile: ${path} is not in the store's temp folder`);
    const fh = await open(path, "r+");
    try {
      await fh.sync();
      await this.disk.dropCached(fh.fd);
    } finally {
      await fh.close();
    }
    return this.disk.commit(path, key, { etag: undefined, contentType: opts.contentType });
  }

  /** `put` of a request's body of known length, written in native code (see writeTempFromRequest); used by the PUT link route. */
  async putRequest(key: string, request: Request, opts: { length: number; contentType?: string }): Promise<ObjectInfo> {
    this.disk.objectPath(key);
    const { tmp, md5 } = await this.disk.writeTempFromRequest(request, opts.length);
    return this.disk.commit(tmp, key, { etag: md5, contentType: opts.contentType });
  }

  async exists(key: string): Promise<boolean> {
    return (await statFile(this.disk.objectPath(key))) !== null;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const path = this.disk.objectPath(key);
    const st = await statFile(path);
    if (!st) return null;
    const meta = await this.disk.readMeta(key, path, st);
    return { key, size: st.size, etag: meta.etag, contentType: meta.contentType, updatedAt: st.mtime };
  }

  async get(key: string, opts: { range?: { start: number; end?: number } } = {}): Promise<ReadableStream<Uint8Array> | null> {
    const path = this.disk.objectPath(key);
    // Open first: a concurrent put renames a new file over the key, and this reader keeps the old one whole.
    let fh: FileHandle;
    try {
      fh = await open(path, "r");
    } catch (e) {
      if (isMissing(e)) return null;
      throw e;
    }
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      return null;
    }
    const start = Math.max(0, opts.range?.start ?? 0);
    const end = Math.min(st.size - 1, opts.range?.end ?? st.size - 1);
    return streamFile(fh, start, end);
  }

  // ---- listing -------------------------------------------------------------

  /** Every key under `prefix`, sorted. Folders are directories, so only the prefix's folder is walked. */
  private async keysUnder(prefix: string): Promise<string[]> {
    const folder = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
    const out: string[] = [];
    const walk = async (dir: string, keyDir: string): Promise<void> => {
      let entries: import("node:fs").Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (isMissing(e)) return;
        throw e;
      }
      for (const entry of entries) {
        const name = String(entry.name);
        if (keyDir === "" && name === RESERVED_SEGMENT) continue;
        const key = keyDir === "" ? name : `${keyDir}/${name}`;
        if (entry.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(join(dir, name), key);
        } else if (entry.isFile() && key.startsWith(prefix)) {
          out.push(key);
        }
      }
    };
    await walk(folder === "" ? this.root : join(this.root, ...folder.split("/")), folder);
    return out.sort(compareKeys);
  }

  async list(prefix: string, opts: { after?: string; limit?: number; delimiter?: string } = {}) {
    assertPrefix(prefix);
    const limit = Math.max(1, Math.min(LIST_MAX, opts.limit ?? LIST_MAX));
    const delimiter = opts.delimiter || undefined;
    const keys = await this.keysUnder(prefix);
    // Keys sharing a folder are adjacent in sorted order, so grouping needs only the previous entry.
    const entries: { name: string; isPrefix: boolean }[] = [];
    for (const key of keys) {
      const i = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
      if (i >= 0) {
        const name = key.slice(0, i + delimiter!.length);
        if (entries[entries.length - 1]?.name !== name) entries.push({ name, isPrefix: true });
      } else entries.push({ name: key, isPrefix: false });
    }
    const after = opts.after;
    const remaining = after === undefined ? entries : entries.filter((e) => compareKeys(e.name, after) > 0);
    const page = remaining.slice(0, limit);
    const objects: ObjectInfo[] = [];
    for (const e of page) {
      if (e.isPrefix) continue;
      const info = await this.stat(e.name);
      if (info) objects.push(info);
    }
    return {
      objects,
      prefixes: page.filter((e) => e.isPrefix).map((e) => e.name),
      next: remaining.length > limit ? page[page.length - 1]!.name : null,
    };
  }

  // ---- copy, move, delete --------------------------------------------------

  async copy(from: string, to: string): Promise<void> {
    const src = this.disk.objectPath(from);
    this.disk.objectPath(to);
    const info = await this.stat(from);
    if (!info) throw new AppError("not_found", `object '${from}' not found`);
    const tmp = this.disk.tmpPath();
    await mkdir(dirname(tmp), { recursive: true });
    try {
      await copyFile(src, tmp);
      const fh = await open(tmp, "r+");
      await fh.sync().finally(() => fh.close());
    } catch (e) {
      await rm(tmp, { force: true });
      if (isMissing(e)) throw new AppError("not_found", `object '${from}' not found`);
      throw e;
    }
    await this.disk.commit(tmp, to, { etag: info.etag, contentType: info.contentType });
  }

  async move(from: string, to: string): Promise<void> {
    const src = this.disk.objectPath(from);
    const dst = this.disk.objectPath(to);
    if (from === to) {
      if (!(await statFile(src))) throw new AppError("not_found", `object '${from}' not found`);
      return;
    }
    const info = await this.stat(from);
    if (!info) throw new AppError("not_found", `object '${from}' not found`);
    // A rename keeps inode and mtime, so the metadata written first is valid once the rename lands.
    const st = (await statFile(src))!;
    await this.disk.writeMeta(to, { etag: info.etag, contentType: info.contentType, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
    await renameInto(src, dst, to);
    await syncDir(dirname(dst));
    await rm(this.disk.metaPath(from), { force: true });
    await this.pruneDirs(dirname(src));
  }

  async delete(key: string): Promise<void> {
    const path = this.disk.objectPath(key);
    try {
      await unlink(path);
    } catch (e) {
      // Missing, or a folder of that name: in object terms there is no object at this key.
      if (!isMissing(e) && (e as NodeJS.ErrnoException).code !== "EISDIR" && (e as NodeJS.ErrnoException).code !== "EPERM") throw e;
    }
    await rm(this.disk.metaPath(key), { force: true });
    await this.pruneDirs(dirname(path));
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (prefix === "") throw new AppError("invalid_input", "prefix: must not be empty when deleting (that would delete every object)");
    assertPrefix(prefix);
    const keys = await this.keysUnder(prefix);
    for (const key of keys) await this.delete(key);
    return keys.length;
  }

  /** Empty folders are not objects; remove them up to the root so they do not linger in the tree. */
  private async pruneDirs(dir: string): Promise<void> {
    while (dir.startsWith(this.root + sep)) {
      try {
        await rmdir(dir);
      } catch {
        return;
      }
      dir = dirname(dir);
    }
  }

  // ---- links and pins ------------------------------------------------------

  async presign(key: string, opts: PresignOptions): Promise<string> {
    this.disk.objectPath(key);
    return this.links.presign(key, opts);
  }

  /**
   * Checks a link presented to the service: the signature over everything it
   * binds, the method it is used with, and its expiry. Throws `forbidden`
   * (403) otherwise; the route has then read and written nothing.
   */
  verifyLink(method: string, key: string, query: URLSearchParams): LinkClaims {
    return this.links.verifyLink(method, key, query);
  }

  /** Pins an object's current version for serving it natively by path (./links.ts). */
  pin(key: string, holdMs?: number): Promise<{ path: string; info: ObjectInfo } | null> {
    return pin(this.disk, key, holdMs);
  }

  // ---- multipart -------------------------------------------------------------

  createMultipart(key: string, opts: { contentType?: string } = {}): Promise<MultipartUpload> {
    return this.multipart.createMultipart(key, opts);
  }

  presignPart(upload: MultipartUpload, partNumber: number, expiresIn: number): Promise<string> {
    return this.multipart.presignPart(upload, partNumber, expiresIn);
  }

  putPart(upload: MultipartUpload, partNumber: number, body: Body): Promise<{ etag: string; size: number }> {
    return this.multipart.putPart(upload, partNumber, body);
  }

  putPartRequest(upload: MultipartUpload, partNumber: number, request: Request, length: number): Promise<{ etag: string; size: number }> {
    return this.multipart.putPartRequest(upload, partNumber, request, length);
  }

  completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<ObjectInfo> {
    return this.multipart.completeMultipart(upload, parts);
  }

  abortMultipart(upload: MultipartUpload): Promise<void> {
    return this.multipart.abortMultipart(upload);
  }

  /** Multipart uploads and pins older than `olderThanMs`, temp files not written for `tmpOlderThanMs` (left by crashes or abandoned clients). */
  async sweep(olderThanMs: number, tmpOlderThanMs = olderThanMs): Promise<number> {
    let removed = 0;
    for (const area of ["tmp", "uploads", "pins"]) {
      const cutoff = this.now() - (area === "tmp" ? tmpOlderThanMs : olderThanMs);
      const dir = join(this.disk.sys, area);
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        const st = await stat(join(dir, name)).catch(() => null);
        if (st && st.mtimeMs < cutoff) {
          await rm(join(dir, name), { recursive: true, force: true });
          removed++;
        }
      }
    }
    return removed;
  }
}

/** S3 orders keys by their UTF-8 bytes; so does this. */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
