/**
 * The bytes of one upload on their way to the object store: the producer
 * (the SFTP session) pushes chunks, the store's `put` pulls them as an async
 * iterable. `push` resolves at once while fewer than `highWaterMark` bytes
 * wait, later otherwise, so a client that sends faster than storage writes
 * is held back by its own unanswered requests, and memory stays bounded.
 */
export class ChunkQueue implements AsyncIterable<Uint8Array> {
  private chunks: Uint8Array[] = [];
  private head = 0;
  private bytes = 0;
  private ended = false;
  private failure: Error | null = null;
  private wakeConsumer: (() => void) | null = null;
  private waitingProducers: (() => void)[] = [];

  constructor(private readonly highWaterMark: number) {}

  /** Bytes pushed and not yet taken by the consumer. */
  get queued(): number {
    return this.bytes;
  }

  push(chunk: Uint8Array): Promise<void> {
    if (this.ended || this.failure) return Promise.reject(this.failure ?? new Error("upload already finished"));
    this.chunks.push(chunk);
    this.bytes += chunk.byteLength;
    this.wake();
    if (this.bytes < this.highWaterMark) return Promise.resolve();
    return new Promise((resolve) => this.waitingProducers.push(resolve));
  }

  /** No more chunks: the consumer ends after the last one. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  /** The consumer throws `error` at its next read; waiting producers are released. */
  fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.chunks = [];
    this.head = 0;
    this.bytes = 0;
    this.wake();
    this.releaseProducers();
  }

  private wake(): void {
    const w = this.wakeConsumer;
    this.wakeConsumer = null;
    w?.();
  }

  private releaseProducers(): void {
    const waiting = this.waitingProducers;
    this.waitingProducers = [];
    for (const r of waiting) r();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.head < this.chunks.length) {
        const chunk = this.chunks[this.head]!;
        this.chunks[this.head++] = undefined as never;
        if (this.head > 1024 && this.head * 2 > this.chunks.length) {
          this.chunks = this.chunks.slice(this.head);
          this.head = 0;
        }
        this.bytes -= chunk.byteLength;
        if (this.bytes < this.highWaterMark) this.releaseProducers();
        yield chunk;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wakeConsumer = resolve));
    }
  }
}
