import type { ObjectStore } from "../../adapters/storage/port";
import { AppError } from "../../domain/errors";

/** A forward gap this small is read through rather than answered by opening a new ranged stream. */
const SKIP_LIMIT = 1024 * 1024;

/**
 * Serves reads at offsets from one stored object. Clients read a file front
 * to back in fixed-size requests, so one streamed GET serves them all; a
 * read elsewhere (a resumed download, a client reading out of order) opens
 * a new ranged GET at that offset. Calls must not overlap (the session
 * serialises them per handle).
 */
export class ObjectReader {
  private stream: ReadableStreamDefaultReader<Uint8Array> | null = null;
  /** Offset of the next byte `pending` (then the stream) yields. */
  private pos = 0;
  private pending: Uint8Array | null = null;
  private closed = false;

  constructor(
    private readonly storage: ObjectStore,
    private readonly key: string,
    readonly size: number,
  ) {}

  /** Up to `length` bytes at `offset`; null at or past the end. */
  async read(offset: number, length: number): Promise<Uint8Array | null> {
    if (this.closed) throw new Error("reader closed");
    if (offset >= this.size || length <= 0) return null;
    if (this.stream === null || offset < this.pos || offset - this.pos > SKIP_LIMIT) await this.open(offset);
    while (this.pos < offset) {
      const chunk = await this.next();
      if (!chunk) return null;
      const skip = Math.min(chunk.byteLength, offset - this.pos);
      this.pos += skip;
      if (skip < chunk.byteLength) this.pending = chunk.subarray(skip);
    }
    const want = Math.min(length, this.size - offset);
    const parts: Uint8Array[] = [];
    let got = 0;
    while (got < want) {
      const chunk = await this.next();
      if (!chunk) break;
      const take = Math.min(chunk.byteLength, want - got);
      parts.push(take === chunk.byteLength ? chunk : chunk.subarray(0, take));
      if (take < chunk.byteLength) this.pending = chunk.subarray(take);
      got += take;
      this.pos += take;
    }
    if (got === 0) return null;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, got);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.drop();
  }

  private async next(): Promise<Uint8Array | null> {
    if (this.pending) {
      const p = this.pending;
      this.pending = null;
      return p;
    }
    const r = await this.stream!.read();
    return r.done ? null : r.value;
  }

  private async open(offset: number): Promise<void> {
    await this.drop();
    const body = await this.storage.get(this.key, { range: { start: offset } });
    if (!body) throw new AppError("not_found", "the file was removed while it was being read");
    this.stream = body.getReader();
    this.pos = offset;
  }

  private async drop(): Promise<void> {
    this.pending = null;
    const s = this.stream;
    this.stream = null;
    if (s) await s.cancel().catch(() => {});
  }
}
