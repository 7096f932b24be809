import { createHash, randomUUID } from "node:crypto";
import { type FileHandle, copyFile, link, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink, writeFile } from "node:fs/promises";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { AppError } from "../../domain/errors";
import { chunksOf } from "./body";
import { assertKey, assertPrefix, RESERVED_SEGMENT } from "./keys";
import { dropWrittenSoon } from "./page-cache";
import type { Body, CompletedPart, FileStore, MultipartUpload, ObjectInfo, ObjectStore, PresignOptions, StorageConfig, WriteObserver } from "./port";
import { type LinkClaims, sign, signatureMatches } from "./signing";

/** S3's multipart rules, kept here too so a client that works on one works on the other. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
export const MAX_PARTS = 10_000;
const READ_CHUNK = 256 * 1024;
const WRITE_BATCH = 1024 * 1024;
/** Under Linux's IOV_MAX (1024), for bodies that arrive in tiny chunks. */
const MAX_IOVECS = 512;
const LIST_MAX = 1000;
/** How long a pinned version (see `pin`) keeps its private name. */
const PIN_HOLD_MS = 10 * 60_000;
/** Reused for hashing a written file and joining parts: 1 MiB reads, no allocation per chunk. */
const HASH_BUFFER = 1024 * 1024;

export interface LocalStoreOptions {
  /** Milliseconds since the epoch; links expire by it. Tests move it. */
  now?: () => number;
}

/**
 * What the store keeps beside an object. It names the data file's inode, size
 * and mtime: if a crash fell between renaming the data and its metadata, the
 * mismatch shows and the etag is computed again instead of trusted.
 */
interface Meta {
  /** Absent until first asked for when the writer did not hash the bytes (`putFile` without an etag). */
  etag?: string;
  contentType: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

interface UploadRecord {
  key: string;
  contentType?: string;
}

type LocalConfig = Extract<StorageConfig, { kind: "local" }>;

/**
 * Objects as plain files under `root/<key>`; the store's own files under
 * `root/.fps/` (tmp: uploads in progress; meta: etag and content type;
 * uploads: multipart parts; pins: versions being served by GET links). Every write goes to a temp file on the same
 * file system, is fsynced and renamed into place, so a reader sees the old
 * object or the new one, never part of one.
 */
export class LocalObjectStore implements ObjectStore {
  readonly kind = "local" as const;
  readonly root: string;
  /** Files written leave the page cache once they are on disk (src/adapters/storage/page-cache.ts). */
  readonly dropWritten: boolean;
  private readonly sys: string;
  private readonly signingKey: Buffer;
  private readonly publicUrl: string;
  private readonly now: () => number;

  constructor(cfg: LocalConfig, opts: LocalStoreOptions = {}) {
    this.root = resolve(cfg.root);
    this.dropWritten = cfg.dropWritten ?? false;
    this.sys = join(this.root, RESERVED_SEGMENT);
    this.signingKey = Buffer.from(cfg.signingKey, "base64");
    if (this.signingKey.length < 32) throw new Error("storage: the local store needs a signing key of at least 32 bytes");
    this.publicUrl = cfg.publicUrl.replace(/\/+$/, "");
    this.now = opts.now ?? Date.now;
  }

  // ---- paths ---------------------------------------------------------------

  private objectPath(key: string): string {
    assertKey(key);
    const p = resolve(this.root, ...key.split("/"));
    // Belt and braces: assertKey already refuses everything that could climb out.
    if (!p.startsWith(this.root + sep)) throw new AppError("invalid_input", `key escapes the store: '${key}'`);
    return p;
  }

  private metaPath(key: string): string {
    // Flat, hashed names: a key and a longer key under it ("a", "a/b") cannot collide here.
    const h = createHash("sha256").update(key).digest("hex");
    return join(this.sys, "meta", h.slice(0, 2), `${h}.json`);
  }

  private uploadDir(uploadId: string): string {
    if (!/^[a-f0-9]{32}$/.test(uploadId)) throw new AppError("not_found", `no multipart upload '${String(uploadId).slice(0, 64)}'`);
    return join(this.sys, "uploads", uploadId);
  }

  private tmpPath(): string {
    return join(this.sys, "tmp", randomUUID());
  }

  /** Writers that make their own files (the engine's workers) write them in the temp folder and `putFile` them. */
  get files(): FileStore {
    const store = this;
    return {
      get dropWritten() {
        return store.dropWritten;
      },
      tempPath: () => {
        mkdirSync(join(this.sys, "tmp"), { recursive: true });
        return this.tmpPath();
      },
      putFile: (key, path, opts) => this.putFile(key, path, opts),
    };
  }

  // ---- writing -------------------------------------------------------------

  /** After a file's fsync: its pages leave the page cache when the store is set so (they are clean, nothing is lost). */
  private async dropCached(fd: number): Promise<void> {
    if (this.dropWritten) await dropWrittenSoon(fd);
  }

  /** Streams the body into a new temp file, fsynced; the caller renames it into place or removes it. */
  private async writeTemp(body: Body | AsyncIterable<Uint8Array>, opts: { md5: boolean; observe?: WriteObserver }): Promise<{ tmp: string; md5: string | null }> {
    const tmp = this.tmpPath();
    await mkdir(dirname(tmp), { recursive: true });
    const fh = await open(tmp, "wx");
    const hash = opts.md5 ? createHash("md5") : null;
    const observe = opts.observe;
    observe?.opened(tmp);
    let written = 0;
    const write = (data: Uint8Array[], bytes: number) => {
      const w = writeBatch(fh, data);
      return observe
        ? w.then(() => {
            written += bytes;
            observe.wrote(written);
          })
        : w;
    };
    // One write in flight while the next batch is read and hashed, so disk and CPU overlap.
    let writing: Promise<void> = Promise.resolve();
    try {
      // Request bodies arrive in small chunks; batching them makes far fewer write calls.
      let batch: Uint8Array[] = [];
      let batched = 0;
      for await (const chunk of chunksOf(body as Body)) {
        hash?.update(chunk);
        batch.push(chunk);
        batched += chunk.byteLength;
        if (batched >= WRITE_BATCH || batch.length >= MAX_IOVECS) {
          const data = batch;
          await writing;
          writing = write(data, batched);
          // Observed now, awaited before the next write: a failure is not an unhandled rejection meanwhile.
          writing.catch(() => {});
          batch = [];
          batched = 0;
        }
      }
      await writing;
      if (batched > 0) await write(batch, batched);
      observe?.done(written);
      await fh.sync();
      await this.dropCached(fh.fd);
      await fh.close();
    } catch (e) {
      await writing.catch(() => {});
      await fh.close().catch(() => {});
      await rm(tmp, { force: true });
      throw e;
    }
    return { tmp, md5: hash ? hash.digest("hex") : null };
  }

  /**
   * Streams a request's body to a new temp file in native code (`Bun.write`),
   * so its bytes never pass through JavaScript: on the service's heap, the
   * garbage of millions of body chunks is what made large uploads grow its
   * memory (bench/results/documents.md). The file is then read back through
   * one reused buffer for its md5, and fsynced. `length` is the request's
   * content-length; a body that ends short (client gone) fails and leaves nothing.
   */
  private async writeTempFromRequest(request: Request, length: number): Promise<{ tmp: string; md5: string }> {
    const tmp = this.tmpPath();
    await mkdir(dirname(tmp), { recursive: true });
    try {
      let written: number;
      try {
        written = await Bun.write(tmp, request);
      } catch (e) {
        throw new AppError("invalid_input", `body: the upload ended before its ${length} bytes arrived (${(e as Error).message})`);
      }
      if (written !== length) throw new AppError("invalid_input", `body: ${written} bytes arrived, content-length announced ${length}`);
      const fh = await open(tmp, "r+");
      try {
        const hash = createHash("md5");
        const buf = new Uint8Array(HASH_BUFFER);
        for (let pos = 0; ; ) {
          const { bytesRead } = await fh.read(buf, 0, buf.byteLength, pos);
          if (bytesRead === 0) break;
          hash.update(buf.subarray(0, bytesRead));
          pos += bytesRead;
        }
        await fh.sync();
        await this.dropCached(fh.fd);
        return { tmp, md5: hash.digest("hex") };
      } finally {
        await fh.close();
      }
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  /** Joins files into a new temp file through one reused buffer (no per-chunk allocations), fsynced. */
  private async concatTemp(paths: string[]): Promise<string> {
    const tmp = this.tmpPath();
    await mkdir(dirname(tmp), { recursive: true });
    const out = await open(tmp, "wx");
    try {
      const buf = new Uint8Array(HASH_BUFFER);
      for (const path of paths) {
        const fh = await open(path, "r");
        try {
          for (let pos = 0; ; ) {
            const { bytesRead } = await fh.read(buf, 0, buf.byteLength, pos);
            if (bytesRead === 0) break;
            await writeAll(out, buf.subarray(0, bytesRead));
            pos += bytesRead;
          }
        } finally {
          await fh.close();
        }
      }
      await out.sync();
      await this.dropCached(out.fd);
      await out.close();
    } catch (e) {
      await out.close().catch(() => {});
      await rm(tmp, { force: true });
      throw e;
    }
    return tmp;
  }

  /** Renames a finished temp file to the key and records its metadata. */
  private async commit<E extends string | undefined>(tmp: string, key: string, info: { etag: E; contentType?: string }): Promise<Omit<ObjectInfo, "etag"> & { etag: E }> {
    const target = this.objectPath(key);
    try {
      const st = await stat(tmp);
      const contentType = info.contentType || guessType(key);
      await this.writeMeta(key, { etag: info.etag, contentType, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
      await renameInto(tmp, target, key);
      await syncDir(dirname(target));
      return { key, size: st.size, etag: info.etag, contentType, updatedAt: st.mtime };
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  private async writeMeta(key: string, meta: Meta): Promise<void> {
    const path = this.metaPath(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = this.tmpPath();
    await writeFile(tmp, JSON.stringify(meta));
    await rename(tmp, path);
  }

  async put(key: string, body: Body, opts: { contentType?: string } = {}): Promise<ObjectInfo> {
    this.objectPath(key);
    const { tmp, md5 } = await this.writeTemp(body, { md5: true });
    return this.commit(tmp, key, { etag: md5!, contentType: opts.contentType });
  }

  /** `put` without hashing while writing (the etag is computed when first asked for, as for putFile), telling `observe` where the bytes go. */
  async putArriving(key: string, body: Body, opts: { contentType?: string; observe?: WriteObserver } = {}): Promise<Omit<ObjectInfo, "etag">> {
    this.objectPath(key);
    const { tmp } = await this.writeTemp(body, { md5: false, observe: opts.observe });
    return this.commit(tmp, key, { etag: undefined, contentType: opts.contentType });
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
    this.objectPath(key);
    if (dirname(resolve(path)) !== join(this.sys, "tmp")) throw new Error(`putFile: ${path} is not in the store's temp folder`);
    const fh = await open(path, "r+");
    try {
      await fh.sync();
      await this.dropCached(fh.fd);
    } finally {
      await fh.close();
    }
    return this.commit(path, key, { etag: undefined, contentType: opts.contentType });
  }

  /** `put` of a request's body of known length, written in native code (see writeTempFromRequest); used by the PUT link route. */
  async putRequest(key: string, request: Request, opts: { length: number; contentType?: string }): Promise<ObjectInfo> {
    this.objectPath(key);
    const { tmp, md5 } = await this.writeTempFromRequest(request, opts.length);
    return this.commit(tmp, key, { etag: md5, contentType: opts.contentType });
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
  async pin(key: string, holdMs = PIN_HOLD_MS): Promise<{ path: string; info: ObjectInfo } | null> {
    const path = this.objectPath(key);
    const pinned = join(this.sys, "pins", randomUUID());
    await mkdir(dirname(pinned), { recursive: true });
    try {
      await link(path, pinned);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (isMissing(e) || code === "EISDIR" || code === "EPERM" || code === "EXDEV" || code === "ENOTSUP" || code === "EMLINK") return null;
      throw e;
    }
    try {
      const st = await stat(pinned);
      if (!st.isFile()) throw new AppError("not_found", `object '${key}' not found`);
      const meta = await this.readMeta(key, pinned, st);
      setTimeout(() => void rm(pinned, { force: true }), holdMs).unref();
      return { path: pinned, info: { key, size: st.size, etag: meta.etag, contentType: meta.contentType, updatedAt: st.mtime } };
    } catch (e) {
      await rm(pinned, { force: true });
      throw e;
    }
  }

  // ---- reading -------------------------------------------------------------

  private async readMeta(key: string, path: string, st: { size: number; mtimeMs: number; ino: number }): Promise<Meta & { etag: string }> {
    let contentType: string | undefined;
    try {
      const meta = JSON.parse(await readFile(this.metaPath(key), "utf8")) as Meta;
      if (meta.ino === st.ino && meta.size === st.size && meta.mtimeMs === st.mtimeMs) {
        if (meta.etag) return meta as Meta & { etag: string };
        contentType = meta.contentType;
      }
    } catch {}
    // Not hashed yet (putFile), missing or stale (a crash between the two renames, or a file placed by hand): compute it.
    const hash = createHash("md5");
    const fh = await open(path, "r");
    try {
      for await (const chunk of fileChunks(fh, 0, st.size - 1)) hash.update(chunk);
    } finally {
      await fh.close();
    }
    const meta = { etag: hash.digest("hex"), contentType: contentType ?? guessType(key), size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
    await this.writeMeta(key, meta).catch(() => {});
    return meta;
  }

  async exists(key: string): Promise<boolean> {
    return (await statFile(this.objectPath(key))) !== null;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const path = this.objectPath(key);
    const st = await statFile(path);
    if (!st) return null;
    const meta = await this.readMeta(key, path, st);
    return { key, size: st.size, etag: meta.etag, contentType: meta.contentType, updatedAt: st.mtime };
  }

  async get(key: string, opts: { range?: { start: number; end?: number } } = {}): Promise<ReadableStream<Uint8Array> | null> {
    const path = this.objectPath(key);
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
    const src = this.objectPath(from);
    this.objectPath(to);
    const info = await this.stat(from);
    if (!info) throw new AppError("not_found", `object '${from}' not found`);
    const tmp = this.tmpPath();
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
    await this.commit(tmp, to, { etag: info.etag, contentType: info.contentType });
  }

  async move(from: string, to: string): Promise<void> {
    const src = this.objectPath(from);
    const dst = this.objectPath(to);
    if (from === to) {
      if (!(await statFile(src))) throw new AppError("not_found", `object '${from}' not found`);
      return;
    }
    const info = await this.stat(from);
    if (!info) throw new AppError("not_found", `object '${from}' not found`);
    // A rename keeps inode and mtime, so the metadata written first is valid once the rename lands.
    const st = (await statFile(src))!;
    await this.writeMeta(to, { etag: info.etag, contentType: info.contentType, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
    await renameInto(src, dst, to);
    await syncDir(dirname(dst));
    await rm(this.metaPath(from), { force: true });
    await this.pruneDirs(dirname(src));
  }

  async delete(key: string): Promise<void> {
    const path = this.objectPath(key);
    try {
      await unlink(path);
    } catch (e) {
      // Missing, or a folder of that name: in object terms there is no object at this key.
      if (!isMissing(e) && (e as NodeJS.ErrnoException).code !== "EISDIR" && (e as NodeJS.ErrnoException).code !== "EPERM") throw e;
    }
    await rm(this.metaPath(key), { force: true });
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

  // ---- links -----------------------------------------------------------------

  private link(key: string, claims: LinkClaims): string {
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

  private expiry(expiresIn: number): number {
    if (!Number.isInteger(expiresIn) || expiresIn < 1) throw new AppError("invalid_input", "expiresIn: must be a whole number of seconds, at least 1");
    return Math.floor(this.now() / 1000) + expiresIn;
  }

  async presign(key: string, opts: PresignOptions): Promise<string> {
    this.objectPath(key);
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

  // ---- multipart -------------------------------------------------------------

  async createMultipart(key: string, opts: { contentType?: string } = {}): Promise<MultipartUpload> {
    this.objectPath(key);
    const uploadId = randomUUID().replaceAll("-", "");
    const dir = this.uploadDir(uploadId);
    await mkdir(dir, { recursive: true });
    const record: UploadRecord = { key, contentType: opts.contentType };
    await writeFile(join(dir, "upload.json"), JSON.stringify(record));
    return { uploadId, key };
  }

  private async uploadRecord(upload: MultipartUpload): Promise<{ dir: string; record: UploadRecord }> {
    const dir = this.uploadDir(upload.uploadId);
    let record: UploadRecord;
    try {
      record = JSON.parse(await readFile(join(dir, "upload.json"), "utf8")) as UploadRecord;
    } catch {
      throw new AppError("not_found", `no multipart upload '${upload.uploadId}'`);
    }
    if (record.key !== upload.key) throw new AppError("not_found", `no multipart upload '${upload.uploadId}' for '${upload.key}'`);
    return { dir, record };
  }

  async presignPart(upload: MultipartUpload, partNumber: number, expiresIn: number): Promise<string> {
    assertPartNumber(partNumber);
    this.objectPath(upload.key);
    this.uploadDir(upload.uploadId);
    return this.link(upload.key, { method: "PUT", key: upload.key, expires: this.expiry(expiresIn), uploadId: upload.uploadId, partNumber });
  }

  /**
   * Stores one part (what a presigned part URL does). Each part file carries
   * its md5 in its name: a re-sent part replaces the earlier one, and
   * completion picks exactly the bytes whose ETag the client lists.
   */
  async putPart(upload: MultipartUpload, partNumber: number, body: Body): Promise<{ etag: string; size: number }> {
    assertPartNumber(partNumber);
    const { dir } = await this.uploadRecord(upload);
    const { tmp, md5 } = await this.writeTemp(body, { md5: true });
    return this.placePart(upload, dir, partNumber, tmp, md5!);
  }

  /** `putPart` of a request's body of known length, written in native code (see writeTempFromRequest). */
  async putPartRequest(upload: MultipartUpload, partNumber: number, request: Request, length: number): Promise<{ etag: string; size: number }> {
    assertPartNumber(partNumber);
    const { dir } = await this.uploadRecord(upload);
    const { tmp, md5 } = await this.writeTempFromRequest(request, length);
    return this.placePart(upload, dir, partNumber, tmp, md5);
  }

  private async placePart(upload: MultipartUpload, dir: string, partNumber: number, tmp: string, md5: string): Promise<{ etag: string; size: number }> {
    const name = `${partNumber}-${md5}`;
    try {
      await rename(tmp, join(dir, name));
    } catch (e) {
      await rm(tmp, { force: true });
      if (isMissing(e)) throw new AppError("not_found", `no multipart upload '${upload.uploadId}'`);
      throw e;
    }
    for (const other of await readdir(dir)) {
      if (other.startsWith(`${partNumber}-`) && other !== name) await rm(join(dir, other), { force: true });
    }
    const { size } = await stat(join(dir, name));
    return { etag: md5, size };
  }

  async completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<ObjectInfo> {
    const { dir, record } = await this.uploadRecord(upload);
    if (parts.length === 0) throw new AppError("invalid_input", "parts: at least one part is required");
    const files: { path: string; size: number; md5: string }[] = [];
    let previous = 0;
    for (const [i, part] of parts.entries()) {
      if (part.partNumber <= previous) throw new AppError("invalid_input", `parts[${i}].partNumber: parts must be listed in ascending order without repeats`);
      previous = part.partNumber;
      const md5 = stripQuotes(part.etag).toLowerCase();
      const path = join(dir, `${part.partNumber}-${md5}`);
      const st = /^[a-f0-9]{32}$/.test(md5) ? await statFile(path) : null;
      if (!st) throw new AppError("invalid_input", `parts[${i}]: no part ${part.partNumber} with ETag ${part.etag} was uploaded`);
      files.push({ path, size: st.size, md5 });
    }
    for (const [i, f] of files.slice(0, -1).entries()) {
      if (f.size < MIN_PART_BYTES) throw new AppError("invalid_input", `parts[${i}]: every part but the last must be at least ${MIN_PART_BYTES} bytes`);
    }
    const tmp = await this.concatTemp(files.map((f) => f.path));
    // The ETag S3 gives a multipart object: md5 of the parts' binary md5s, then the part count.
    const etag = `${createHash("md5")
      .update(Buffer.concat(files.map((f) => Buffer.from(f.md5, "hex"))))
      .digest("hex")}-${files.length}`;
    const info = await this.commit(tmp, upload.key, { etag, contentType: record.contentType });
    await rm(dir, { recursive: true, force: true });
    return info;
  }

  async abortMultipart(upload: MultipartUpload): Promise<void> {
    await rm(this.uploadDir(upload.uploadId), { recursive: true, force: true });
  }

  /** Multipart uploads and pins older than `olderThanMs`, temp files not written for `tmpOlderThanMs` (left by crashes or abandoned clients). */
  async sweep(olderThanMs: number, tmpOlderThanMs = olderThanMs): Promise<number> {
    let removed = 0;
    for (const area of ["tmp", "uploads", "pins"]) {
      const cutoff = this.now() - (area === "tmp" ? tmpOlderThanMs : olderThanMs);
      const dir = join(this.sys, area);
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

/** Where the service serves the local store's links (src/http/routes/storage.ts). */
export const LINK_PATH = "/storage/o/";

/** Each key segment percent-encoded, slashes kept, so the URL path reads like the key. */
export function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

function assertPartNumber(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > MAX_PARTS) throw new AppError("invalid_input", `partNumber: must be a whole number from 1 to ${MAX_PARTS}`);
}

const stripQuotes = (etag: string) => String(etag).replace(/^W\//, "").replace(/^"|"$/g, "");

/** S3 orders keys by their UTF-8 bytes; so does this. */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function guessType(key: string): string {
  const t = Bun.file(key).type;
  return t && t !== "application/octet-stream" ? t : "application/octet-stream";
}

function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

async function statFile(path: string) {
  try {
    const st = await stat(path);
    return st.isFile() ? st : null;
  } catch (e) {
    if (isMissing(e)) return null;
    throw e;
  }
}

async function writeAll(fh: FileHandle, data: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < data.byteLength) {
    const { bytesWritten } = await fh.write(data, offset, data.byteLength - offset);
    offset += bytesWritten;
  }
}

/** Writes the chunks with one writev (no copy into a joined buffer), finishing any short write chunk by chunk. */
async function writeBatch(fh: FileHandle, chunks: Uint8Array[]): Promise<void> {
  const total = chunks.reduce((n, c) => n + c.byteLength, 0);
  let skip = (await fh.writev(chunks)).bytesWritten;
  if (skip >= total) return;
  for (const c of chunks) {
    if (skip >= c.byteLength) {
      skip -= c.byteLength;
      continue;
    }
    await writeAll(fh, c.subarray(skip));
    skip = 0;
  }
}

/** Renames a finished file onto the key, making its folders; a folder/file clash is a conflict. */
async function renameInto(from: string, to: string, key: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await mkdir(dirname(to), { recursive: true });
      await rename(from, to);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // A concurrent delete may prune the folder between mkdir and rename: make it again.
      if (code === "ENOENT" && attempt < 3) continue;
      if (code === "ENOTDIR" || code === "EISDIR" || code === "EEXIST" || code === "ENOTEMPTY")
        throw new AppError("conflict", `key '${key}' clashes with an existing object or folder (on local storage a key cannot be both)`);
      throw e;
    }
  }
}

/** Makes a rename durable: the directory entry is on disk once this returns. */
async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, "r");
    await fh.sync().finally(() => fh.close());
  } catch {}
}

async function* fileChunks(fh: FileHandle, start: number, end: number): AsyncGenerator<Uint8Array> {
  let pos = start;
  while (pos <= end) {
    const n = Math.min(READ_CHUNK, end + 1 - pos);
    const buf = new Uint8Array(n);
    const { bytesRead } = await fh.read(buf, 0, n, pos);
    if (bytesRead === 0) return;
    pos += bytesRead;
    yield bytesRead === n ? buf : buf.subarray(0, bytesRead);
  }
}

/** A pull stream over an open file; the handle closes at the end or when the reader cancels. */
function streamFile(fh: FileHandle, start: number, end: number): ReadableStream<Uint8Array> {
  const chunks = fileChunks(fh, start, end);
  let closed = false;
  const close = async () => {
    if (!closed) {
      closed = true;
      await fh.close().catch(() => {});
    }
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { value, done } = await chunks.next();
          if (done) {
            await close();
            controller.close();
          } else controller.enqueue(value);
        } catch (e) {
          await close();
          controller.error(e);
        }
      },
      async cancel() {
        await chunks.return(undefined);
        await close();
      },
    },
    { highWaterMark: 1 },
  );
}
