import { closeSync, fsync, openSync, writeSync } from "node:fs";
import { type FileHandle, open, rm } from "node:fs/promises";
import { dropWritten, dropWrittenSoon } from "../../adapters/storage/page-cache";
import type { FileStore, ObjectStore } from "../../adapters/storage/port";

/**
 * Text written here streams into `store.put(key, body)` as it is produced:
 * small writes are gathered into chunks of about FLUSH_CHARS, and `write`
 * waits while MAX_QUEUED chunks are not yet taken by the store, so a slow
 * store slows the producer instead of growing memory.
 */
export interface Sink {
  write(text: string): Promise<void>;
  /** Bytes of a part of the output written by another worker, in order after the text so far. */
  writeForeign(bytes: Uint8Array): Promise<void>;
  /** True when `writeForeign` is done with its bytes once it resolves (the caller may reuse its buffer). */
  readonly copies: boolean;
  /** Ends the body and waits for the store to have the whole object. */
  close(): Promise<{ size: number }>;
  /** Fails the body (the store then keeps nothing at the key) and waits for the put to settle. */
  abort(reason: Error): Promise<void>;
}

const FLUSH_CHARS = 256 * 1024;
const MAX_QUEUED = 4;

/**
 * Where an output goes: a file sink when the store can take a finished file
 * (the local store), else a stream into `store.put` (S3).
 */
export function openSink(store: ObjectStore, key: string, contentType: string): Sink {
  const local = store.files;
  return local ? openFileSink(local, key, contentType) : openStreamSink(store, key, contentType);
}

export function openStreamSink(store: ObjectStore, key: string, contentType: string): Sink {
  const queue: Uint8Array[] = [];
  let pending = "";
  let done = false;
  let failure: Error | null = null;
  let wakeConsumer: (() => void) | null = null;
  let wakeProducer: (() => void) | null = null;

  const wake = () => {
    const c = wakeConsumer;
    wakeConsumer = null;
    c?.();
  };
  const wakeP = () => {
    const p = wakeProducer;
    wakeProducer = null;
    p?.();
  };

  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        if (failure) throw failure;
        const chunk = queue.shift();
        if (chunk) {
          wakeP();
          yield chunk;
          continue;
        }
        if (done) return;
        await new Promise<void>((r) => (wakeConsumer = r));
      }
    } finally {
      // The store stopped reading (finished, or gave up on its own error).
      if (!done && !failure) failure = new Error(`storage stopped reading ${key}`);
      wakeP();
    }
  }

  const put = store.put(key, body(), { contentType });
  put.catch((e: unknown) => {
    failure ??= e instanceof Error ? e : new Error(String(e));
    wakeP();
  });

  function flush() {
    if (pending.length === 0) return;
    queue.push(Buffer.from(pending, "utf8"));
    pending = "";
    wake();
  }

  return {
    async write(text) {
      if (failure) throw failure;
      pending += text;
      if (pending.length < FLUSH_CHARS) return;
      flush();
      while (queue.length >= MAX_QUEUED && !failure) await new Promise<void>((r) => (wakeProducer = r));
      if (failure) throw failure;
    },
    copies: false,
    async writeForeign(bytes) {
      if (failure) throw failure;
      flush();
      queue.push(bytes);
      wake();
      while (queue.length >= MAX_QUEUED && !failure) await new Promise<void>((r) => (wakeProducer = r));
      if (failure) throw failure;
    },
    async close() {
      if (failure) throw failure;
      flush();
      done = true;
      wake();
      return put;
    },
    async abort(reason) {
      failure ??= reason;
      wake();
      await put.catch(() => {});
    },
  };
}

const ENCODER = new TextEncoder();
/** An fsync is started in the background after this many bytes, so the disk writes while the worker computes. */
const SYNC_EVERY = 8 * 1024 * 1024;

/**
 * Text written to a file from a worker thread: encoded into one reused
 * buffer and written synchronously (the worker has nothing else to do
 * meanwhile), so a batch leaves no buffer behind for the garbage collector,
 * and no stream machinery runs per chunk. Nothing is hashed here: the local
 * store computes an output's etag when first asked for (`putFile`).
 */
export class FileWriter {
  private fd: number | null;
  private buf = new Uint8Array(1024 * 1024);
  size = 0;
  private unsynced = 0;
  /** Bytes [0, dropped) are synced (or being synced) and dropped from the page cache after it. */
  private dropped = 0;
  private syncing: Promise<void> | null = null;
  /** A background fsync that failed: Linux reports such an error once, so a later fsync may succeed over lost data. */
  private syncError: Error | null = null;

  constructor(
    readonly path: string,
    private readonly opts: { backgroundSync: boolean; dropWritten?: boolean },
  ) {
    this.fd = openSync(path, "wx");
  }

  text(s: string): void {
    if (s.length === 0) return;
    // At most 3 bytes per UTF-16 code unit.
    if (this.buf.length < s.length * 3) this.buf = new Uint8Array(Math.max(s.length * 3, this.buf.length * 2));
    const { written } = ENCODER.encodeInto(s, this.buf);
    this.bytes(this.buf.subarray(0, written));
  }

  bytes(b: Uint8Array): void {
    if (this.fd === null) throw new Error(`${this.path} is closed`);
    for (let off = 0; off < b.byteLength; ) off += writeSync(this.fd, b, off, b.byteLength - off);
    this.size += b.byteLength;
    this.unsynced += b.byteLength;
    if (this.opts.backgroundSync && this.unsynced >= SYNC_EVERY && !this.syncing) {
      this.unsynced = 0;
      const fd = this.fd;
      const upTo = this.size;
      const from = this.dropped;
      this.dropped = upTo;
      this.syncing = new Promise<void>((resolve) =>
        fsync(fd, (err) => {
          if (err) this.syncError ??= err;
          else if (this.opts.dropWritten) dropWritten(fd, from, upTo - from);
          resolve();
        }),
      ).finally(() => (this.syncing = null));
    }
  }

  /** Closes the file (after any background fsync, whose failure it throws; the store fsyncs what is left). */
  async end(): Promise<void> {
    if (this.fd === null) return;
    await this.syncing;
    if (this.syncError) {
      closeSync(this.fd);
      this.fd = null;
      throw this.syncError;
    }
    closeSync(this.fd);
    this.fd = null;
  }

  async discard(): Promise<void> {
    await this.end().catch(() => {});
    await rm(this.path, { force: true });
  }
}

/** A sink writing a temp file in the local store's temp folder, put in place by `putFile` on close. */
export function openFileSink(store: FileStore, key: string, contentType: string): Sink {
  const file = new FileWriter(store.tempPath(), { backgroundSync: true, dropWritten: store.dropWritten });
  let failure: Error | null = null;
  const check = () => {
    if (failure) throw failure;
  };
  return {
    copies: true,
    async write(text) {
      check();
      file.text(text);
    },
    async writeForeign(bytes) {
      check();
      file.bytes(bytes);
    },
    async close() {
      check();
      await file.end();
      try {
        return await store.putFile(key, file.path, { contentType });
      } catch (e) {
        await rm(file.path, { force: true });
        throw e;
      }
    },
    async abort(reason) {
      failure ??= reason;
      await file.discard();
    },
  };
}

/**
 * Where a striped run's coordinator writes (src/engine/stripes): on the
 * service's main thread, so a local file is written with asynchronous writes
 * (the HTTP server never waits on the disk), else a stream into the store.
 */
export function openMainThreadSink(store: ObjectStore, key: string, contentType: string): Sink {
  const local = store.files;
  return local ? openAsyncFileSink(local, key, contentType) : openStreamSink(store, key, contentType);
}

/**
 * A temp file in the local store's temp folder written asynchronously, put
 * in place by `putFile` (which fsyncs it) on close. A datasync is started
 * every SYNC_EVERY bytes without waiting for it, so the disk writes while
 * the rest arrives and the final fsync, which the run waits for, is short.
 */
export function openAsyncFileSink(store: FileStore, key: string, contentType: string): Sink {
  const path = store.tempPath();
  let fh: FileHandle | null = null;
  let failure: Error | null = null;
  let closed = false;
  let unsynced = 0;
  let written = 0;
  /** Bytes [0, dropped) are synced and out of the page cache: each datasync drops only what it added. */
  let dropped = 0;
  let syncing: Promise<void> | null = null;
  async function writeAll(bytes: Uint8Array): Promise<void> {
    if (failure) throw failure;
    fh ??= await open(path, "wx");
    for (let off = 0; off < bytes.byteLength; ) off += (await fh.write(bytes, off, bytes.byteLength - off)).bytesWritten;
    unsynced += bytes.byteLength;
    written += bytes.byteLength;
    if (unsynced >= SYNC_EVERY && !syncing) {
      unsynced = 0;
      const upTo = written;
      const file = fh;
      // Linux reports a failed sync once (a later fsync may succeed over lost data): it fails the sink.
      syncing = file
        .datasync()
        .then(async () => {
          if (store.dropWritten) await dropWrittenSoon(file.fd, dropped, upTo - dropped);
          dropped = upTo;
        })
        .catch((e: unknown) => {
          failure ??= e instanceof Error ? e : new Error(String(e));
        })
        .finally(() => (syncing = null));
    }
  }
  return {
    copies: true,
    write: (text) => writeAll(Buffer.from(text, "utf8")),
    writeForeign: (bytes) => writeAll(bytes),
    async close() {
      if (failure) throw failure;
      closed = true;
      fh ??= await open(path, "wx");
      await syncing;
      await fh.close();
      if (failure) {
        await rm(path, { force: true });
        throw failure;
      }
      try {
        return await store.putFile(key, path, { contentType });
      } catch (e) {
        await rm(path, { force: true });
        throw e;
      }
    },
    async abort(reason) {
      failure ??= reason;
      await syncing;
      if (!closed) await fh?.close().catch(() => {});
      closed = true;
      await rm(path, { force: true });
    },
  };
}
