import { EngineInputError, type ParseLimits, RATIO_FLOOR_BYTES } from "../types";
import { mib } from "./records";

/** Source chunks larger than this are cut so that decoding and record limits work in bounded steps. */
const MAX_CHUNK = 512 * 1024;

/**
 * Pull-based reader over the source: `peek` looks at the first bytes without
 * losing them, `chunks` then replays them and continues with the source, one
 * source chunk per request, so nothing is read ahead of the consumer.
 */
export class ByteReader {
  private readonly it: AsyncIterator<Uint8Array>;
  private head: Uint8Array[] = [];
  private headBytes = 0;
  private ended = false;

  constructor(source: AsyncIterable<Uint8Array>) {
    this.it = source[Symbol.asyncIterator]();
  }

  async peek(n: number): Promise<Uint8Array> {
    while (this.headBytes < n && !this.ended) {
      const r = await this.it.next();
      if (r.done) this.ended = true;
      else if (r.value.byteLength > 0) {
        this.head.push(r.value);
        this.headBytes += r.value.byteLength;
      }
    }
    if (this.head.length > 1) this.head = [concat(this.head, this.headBytes)];
    const first = this.head[0] ?? new Uint8Array(0);
    return first.byteLength > n ? first.subarray(0, n) : first;
  }

  async *chunks(): AsyncGenerator<Uint8Array> {
    try {
      const head = this.head;
      this.head = [];
      for (const c of head) yield* split(c);
      while (!this.ended) {
        const r = await this.it.next();
        if (r.done) break;
        yield* split(r.value);
      }
    } finally {
      // An early stop (an error downstream, a consumer that quits) releases the source.
      if (!this.ended) {
        this.ended = true;
        await this.it.return?.();
      }
    }
  }
}

function* split(chunk: Uint8Array): Generator<Uint8Array> {
  if (chunk.byteLength <= 2 * MAX_CHUNK) {
    if (chunk.byteLength > 0) yield chunk;
    return;
  }
  for (let i = 0; i < chunk.byteLength; i += MAX_CHUNK) yield chunk.subarray(i, i + MAX_CHUNK);
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

export function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

export type InflateLimits = Pick<ParseLimits, "maxDecompressedBytes" | "maxDecompressionRatio">;

/**
 * Counts what a compressed input (a gzip file, the entries of a zip or
 * workbook) has inflated to against what was read of it, and stops it, with
 * an error naming the limit and its setting, once it passes
 * MAX_DECOMPRESSED_BYTES, or MAX_DECOMPRESSION_RATIO past the first
 * RATIO_FLOOR_BYTES. Counted per chunk at the decompression boundary, never per row.
 */
export class InflateBudget {
  compressed = 0;
  inflated = 0;

  constructor(
    private readonly limits: InflateLimits,
    /** What is inflating, for the message: "The gzip file", "The XLSX workbook". */
    private readonly what: string,
  ) {}

  read(bytes: number): void {
    this.compressed += bytes;
  }

  inflate(bytes: number): void {
    this.inflated += bytes;
    const { maxDecompressedBytes: max, maxDecompressionRatio: ratio } = this.limits;
    if (this.inflated > RATIO_FLOOR_BYTES && this.inflated > ratio * this.compressed) {
      throw new EngineInputError(
        `${this.what} decompresses more than ${ratio}-fold (${mib(this.inflated)} from ${mib(this.compressed)} read; ` +
          `the limit MAX_DECOMPRESSION_RATIO = ${ratio}): it looks like a decompression bomb. ` +
          "Send it uncompressed, or raise the limit if such files are expected.",
      );
    }
    if (this.inflated > max) {
      throw new EngineInputError(
        `${this.what} decompresses to more than ${mib(max)} (the limit MAX_DECOMPRESSED_BYTES = ${max}); ` +
          "the run stopped there. Split the file, or raise the limit if such files are expected.",
      );
    }
  }
}

/** Compressed bytes are handed to a decompressor this many at a time, so its ratio is judged on what it has really consumed. */
const METERED_SLICE = 64 * 1024;

/** The source's chunks cut to METERED_SLICE (a store may hand out a whole compressed file as one chunk). */
export async function* meteredSlices(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const c of chunks) {
    for (let i = 0; i < c.byteLength; i += METERED_SLICE) yield c.subarray(i, i + METERED_SLICE);
  }
}

/** Gzip decompressed as it is read (the platform's DecompressionStream), pulled like the source, within `limits`. */
export async function* gunzip(chunks: AsyncIterable<Uint8Array>, limits: InflateLimits): AsyncGenerator<Uint8Array> {
  const it = meteredSlices(chunks)[Symbol.asyncIterator]();
  const budget = new InflateBudget(limits, "The gzip file");
  // highWaterMark 0: a source chunk is pulled only when the decompressor wants one.
  const compressed = new ReadableStream<Uint8Array<ArrayBuffer>>(
    {
      async pull(ctrl) {
        const r = await it.next();
        if (r.done) ctrl.close();
        else {
          budget.read(r.value.byteLength);
          ctrl.enqueue(r.value as Uint8Array<ArrayBuffer>);
        }
      },
      async cancel() {
        await it.return?.(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  const stream = compressed.pipeThrough(new DecompressionStream("gzip"));
  try {
    for await (const c of stream as unknown as AsyncIterable<Uint8Array>) {
      budget.inflate(c.byteLength);
      yield* split(c);
    }
  } catch (err) {
    if (err instanceof EngineInputError) throw err;
    throw new EngineInputError(
      `The file is gzip-compressed but cannot be decompressed after ${budget.inflated} bytes of content ` +
        `(${(err as Error).message || "corrupt or truncated data"}). Send the complete .gz file again, or send it uncompressed.`,
    );
  }
}
