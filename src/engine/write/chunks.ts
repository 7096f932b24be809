/** Output encoded into transferable buffers (src/engine/split.ts). */
const ENCODER = new TextEncoder();
/** Bytes per output buffer handed to the coordinator. */
export const CHUNK_BYTES = 512 * 1024;

/**
 * A stripe's rows encoded into buffers that are transferred to the
 * coordinator (not copied); it hands written ones back as `spare` for the
 * next stripe, so a run allocates a few dozen buffers, not one per chunk.
 */
export class ChunkEncoder {
  readonly buffers: ArrayBuffer[] = [];
  readonly lengths: number[] = [];
  size = 0;
  private cur: Uint8Array | null = null;
  private pos = 0;

  constructor(private readonly spare: ArrayBuffer[]) {}

  text(s: string): void {
    let rest = s;
    for (;;) {
      if (!this.cur || this.pos === this.cur.byteLength) this.next();
      const { read, written } = ENCODER.encodeInto(rest, this.cur!.subarray(this.pos));
      this.pos += written;
      this.size += written;
      if (read === rest.length) return;
      // Full (a character never splits: encodeInto stops before one that does not fit).
      this.seal();
      rest = rest.slice(read);
    }
  }

  private next(): void {
    if (this.cur) this.seal();
    const buf = this.spare.pop() ?? new ArrayBuffer(CHUNK_BYTES);
    this.cur = new Uint8Array(buf);
    this.pos = 0;
  }

  /** The buffer being filled (a new one if there is none, or it is full), for a writer that encodes in place: it writes from `used` on, then calls `advance`. */
  current(): Uint8Array {
    if (!this.cur || this.pos === this.cur.byteLength) this.next();
    return this.cur!;
  }

  get used(): number {
    return this.pos;
  }

  /** `n` bytes were written in place into `current()` at `used`. */
  advance(n: number): void {
    this.pos += n;
    this.size += n;
  }

  /** The buffer being filled is done; the next bytes go to a new one. */
  seal(): void {
    if (!this.cur) return;
    if (this.pos > 0) {
      this.buffers.push(this.cur.buffer as ArrayBuffer);
      this.lengths.push(this.pos);
    } else this.spare.push(this.cur.buffer as ArrayBuffer);
    this.cur = null;
    this.pos = 0;
  }

  finish(): void {
    this.seal();
  }
}
