import { createHash, randomUUID } from "node:crypto";
import { type FileHandle, mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { AppError } from "../../../domain/errors";
import { chunksOf } from "../body";
import { assertKey } from "../keys";
import { dropWrittenSoon } from "../page-cache";
import type { Body, ObjectInfo, WriteObserver } from "../port";

const READ_CHUNK = 256 * 1024;
const WRITE_BATCH = 1024 * 1024;
/** Under Linux's IOV_MAX (1024), for bodies that arrive in tiny chunks. */
const MAX_IOVECS = 512;
/** Reused for hashing a written file and joining parts: 1 MiB reads, no allocation per chunk. */
const HASH_BUFFER = 1024 * 1024;

/**
 * What the store keeps beside an object. It names the data file's inode, size
 * and mtime: if a crash fell between renaming the data and its metadata, the
 * mismatch shows and the etag is computed again instead of trusted.
 */
export interface Meta {
  /** Absent until first asked for when the writer did not hash the bytes (`putFile` without an etag). */
  etag?: string;
  contentType: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

/**
 * Atomic files: every write goes to a temp file under `sys/tmp` (the same
 * file system as the objects), is fsynced and renamed into place with its
 * metadata (etag, content type) beside it, so a reader sees the old object
 * or the new one, never part of one.
 */
export class AtomicFiles {
  constructor(
    readonly root: string,
    /** The store's own folder (`root/.fps`). */
    readonly sys: string,
    /** Files written leave the page cache once they are on disk (src/adapters/storage/page-cache.ts). */
    readonly dropWritten: boolean,
  ) {}

  objectPath(key: string): string {
    assertKey(key);
    const p = resolve(this.root, ...key.split("/"));
    // Belt and braces: assertKey already refuses everything that could climb out.
    if (!p.startsWith(this.root + sep)) throw new AppError("invalid_input", `key escapes the store: '${key}'`);
    return p;
  }

  metaPath(key: string): string {
    // Flat, hashed names: a key and a longer key under it ("a", "a/b") cannot collide here.
    const h = createHash("sha256").update(key).digest("hex");
    return join(this.sys, "meta", h.slice(0, 2), `${h}.json`);
  }

  tmpPath(): string {
    return join(this.sys, "tmp", randomUUID());
  }

  /** After a file's fsync: its pages leave the page cache when the store is set so (they are clean, nothing is lost). */
  async dropCached(fd: number): Promise<void> {
    if (this.dropWritten) await dropWrittenSoon(fd);
  }

  /** Streams the body into a new temp file, fsynced; the caller renames it into place or removes it. */
  async writeTemp(body: Body | AsyncIterable<Uint8Array>, opts: { md5: boolean; observe?: WriteObserver }): Promise<{ tmp: string; md5: string | null }> {
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
  async writeTempFromRequest(request: Request, length: number): Promise<{ tmp: string; md5: string }> {
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
  async concatTemp(paths: string[]): Promise<string> {
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
  async commit<E extends string | undefined>(tmp: string, key: string, info: { etag: E; contentType?: string }): Promise<Omit<ObjectInfo, "etag"> & { etag: E }> {
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

  async writeMeta(key: string, meta: Meta): Promise<void> {
    const path = this.metaPath(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = this.tmpPath();
    await writeFile(tmp, JSON.stringify(meta));
    await rename(tmp, path);
  }

  async readMeta(key: string, path: string, st: { size: number; mtimeMs: number; ino: number }): Promise<Meta & { etag: string }> {
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
}

export function guessType(key: string): string {
  const t = Bun.file(key).type;
  return t && t !== "application/octet-stream" ? t : "application/octet-stream";
}

export function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

export async function statFile(path: string) {
  try {
    const st = await stat(path);
    return st.isFile() ? st : null;
  } catch (e) {
    if (isMissing(e)) return null;
    throw e;
  }
}

export async function writeAll(fh: FileHandle, data: Uint8Array): Promise<void> {
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
export async function renameInto(from: string, to: string, key: string): Promise<void> {
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
export async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, "r");
    await fh.sync().finally(() => fh.close());
  } catch {}
}

export async function* fileChunks(fh: FileHandle, start: number, end: number): AsyncGenerator<Uint8Array> {
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
export function streamFile(fh: FileHandle, start: number, end: number): ReadableStream<Uint8Array> {
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
