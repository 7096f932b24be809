import { chunksOf } from "../../adapters/storage/body";
import type { ObjectInfo, ObjectStore } from "../../adapters/storage/port";
import { AppError } from "../../domain/errors";
import { ChunkQueue } from "./chunk-queue";

/** Bytes waiting for storage before a write's answer is held back (the client then waits for it). */
export const HIGH_WATER_MARK = 4 * 1024 * 1024;
/** A client that keeps sending this far beyond its unanswered writes is not waiting for answers: the upload fails. */
export const HARD_LIMIT = 64 * 1024 * 1024;
/** Writes that arrive ahead of a gap are held in memory up to this many bytes while the gap fills. */
export const REORDER_LIMIT = 8 * 1024 * 1024;

export interface UploadOptions {
  storage: ObjectStore;
  key: string;
  /** The object already at the key, when the client opened it without truncating: its bytes are kept around the written range. */
  base: ObjectInfo | null;
  /** The open created or truncated the file: closing without writes stores an empty file. */
  createsEmpty: boolean;
  /** SFTP's append flag: every write lands at the end, whatever its offset. */
  append: boolean;
  /** Largest object accepted (MAX_UPLOAD_BYTES). */
  maxBytes: number;
}

/**
 * One file being written through a handle, streamed to the object store as
 * it arrives: the store's `put` starts at the first write and reads from a
 * bounded queue, so a large upload never sits whole in memory, and it lands
 * atomically when the handle closes. Nothing is visible before then; an
 * aborted upload (the connection drops, a write fails) stores nothing.
 *
 * Writes must arrive in order, as every common client sends them. A write
 * ahead of the next expected offset is held in memory (up to REORDER_LIMIT)
 * until the gap before it fills; a write behind it (rewriting bytes already
 * streamed) fails the upload. Opening an existing file without truncating
 * keeps its bytes before the first write and after the last (a resumed or
 * partial overwrite), read back from the store while streaming.
 */
export class SpaceUpload {
  private readonly queue = new ChunkQueue(HIGH_WATER_MARK);
  private putting: Promise<ObjectInfo> | null = null;
  private failure: Error | null = null;
  private started = false;
  /** Offset in the new object of the next byte the stream expects. */
  private expected = 0;
  private readonly ahead = new Map<number, Uint8Array>();
  private aheadBytes = 0;
  private tail: { start: number; end: number } | null = null;
  private prefixEnd = 0;
  private finished = false;

  constructor(private readonly o: UploadOptions) {}

  /** The size written so far (what FSTAT reports while the handle is open). */
  get size(): number {
    return Math.max(this.expected, this.o.base?.size ?? 0);
  }

  /**
   * Accepts the bytes at `offset`. Resolves when the upload can take more
   * (storage is keeping up); rejects with the reason the upload failed.
   */
  write(offset: number, data: Uint8Array): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.finished) return Promise.reject(new AppError("conflict", "the file is already closed"));
    if (!this.started) {
      const refused = this.begin(offset);
      if (refused) return Promise.reject(refused);
    }
    if (this.o.append) offset = this.expected;
    if (offset === this.expected) {
      const pushed = this.accept(data);
      while (this.ahead.has(this.expected) && !this.failure) {
        const next = this.ahead.get(this.expected)!;
        this.ahead.delete(this.expected);
        this.aheadBytes -= next.byteLength;
        this.accept(next).catch(() => {});
      }
      return pushed;
    }
    if (offset > this.expected) {
      if (this.aheadBytes + data.byteLength > REORDER_LIMIT || this.ahead.has(offset)) {
        return Promise.reject(this.fail(new AppError("invalid_input", `writes must arrive in order: offset ${offset} is far ahead of ${this.expected}`)));
      }
      this.ahead.set(offset, new Uint8Array(data));
      this.aheadBytes += data.byteLength;
      return Promise.resolve();
    }
    return Promise.reject(this.fail(new AppError("invalid_input", `writes must arrive in order: offset ${offset} rewrites bytes already sent (next is ${this.expected})`)));
  }

  /**
   * Ends the upload and waits until the object is stored. Resolves with the
   * stored object, or null when the handle changed nothing (an existing file
   * opened without truncating and closed without writes).
   */
  async close(): Promise<ObjectInfo | null> {
    if (this.failure) throw this.failure;
    if (this.ahead.size > 0) throw this.fail(new AppError("invalid_input", `the upload has a gap at offset ${this.expected}`));
    this.finished = true;
    if (!this.started) return this.o.createsEmpty ? this.o.storage.put(this.o.key, new Uint8Array(0)) : null;
    const base = this.o.base;
    if (base && this.expected < base.size) this.tail = { start: this.expected, end: base.size - 1 };
    this.queue.end();
    try {
      return await this.putting!;
    } catch (e) {
      throw this.failure ?? e;
    }
  }

  /** Stops the upload; the store keeps nothing of it. */
  async abort(reason = "the upload was aborted"): Promise<void> {
    if (!this.failure) this.fail(new AppError("conflict", reason));
    await this.putting?.catch(() => {});
  }

  private begin(offset: number): Error | null {
    this.started = true;
    const base = this.o.base;
    if (base && (this.o.append || offset > 0)) {
      const start = this.o.append ? base.size : offset;
      if (start > base.size) return this.fail(new AppError("invalid_input", `the first write at offset ${offset} is past the end of the file (${base.size} bytes)`));
      this.prefixEnd = start;
      this.expected = start;
    }
    this.putting = this.o.storage.put(this.o.key, this.body());
    // Observed now: a storage failure fails the writes that follow and is thrown by close().
    this.putting.catch((e: unknown) => {
      this.fail(e instanceof Error ? e : new Error(String(e)));
    });
    return null;
  }

  private accept(data: Uint8Array): Promise<void> {
    if (this.expected + data.byteLength > this.o.maxBytes) {
      return Promise.reject(this.fail(new AppError("payload_too_large", `the file is larger than the ${this.o.maxBytes}-byte upload limit`)));
    }
    if (this.queue.queued > HARD_LIMIT) {
      return Promise.reject(this.fail(new AppError("rate_limited", "too many writes waiting for storage: wait for answers before sending more")));
    }
    this.expected += data.byteLength;
    // No copy: ssh2 hands each request a view on a buffer of its own (freshly decrypted), never reused.
    return this.queue.push(data);
  }

  private fail(e: Error): Error {
    if (!this.failure) {
      this.failure = e;
      this.queue.fail(e);
      this.ahead.clear();
      this.aheadBytes = 0;
    }
    return this.failure;
  }

  private async *body(): AsyncGenerator<Uint8Array> {
    const { storage, key } = this.o;
    if (this.prefixEnd > 0) yield* range(storage, key, 0, this.prefixEnd - 1);
    yield* this.queue;
    const tail = this.tail;
    if (tail) yield* range(storage, key, tail.start, tail.end);
  }
}

async function* range(storage: ObjectStore, key: string, start: number, end: number): AsyncGenerator<Uint8Array> {
  const stream = await storage.get(key, { range: { start, end } });
  if (!stream) throw new AppError("conflict", "the file was removed while it was being written");
  yield* chunksOf(stream);
}
