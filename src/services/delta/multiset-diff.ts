import { mkdtemp, open, rm } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RowSplitter } from "../files/processed-file";
import { streamed } from "../../runtime/gc";

/**
 * Whole-record multiset difference of two processed JSON files, in bounded
 * memory (grace hash join):
 *
 * 1. Both files are streamed; each row's bytes get a 128-bit digest
 *    (xxHash3 and wyhash, 64 bits each), and a 32-byte record (digest, row
 *    index, byte offset, length) goes to one of P partitions chosen by the
 *    digest. With one partition the records stay in memory; with more they
 *    go to temporary files.
 * 2. Each partition is diffed on its own in an open-addressing table keyed
 *    by digest: with a rows in the base and b in the compare, the first
 *    min(a, b) of each side are unchanged, the base's later ones removed,
 *    the compare's later ones added.
 *
 * Memory is about 60 bytes per row of one partition plus 16 bytes per
 * changed row, whatever the file sizes. Rows compare by their bytes as
 * written: the engine writes every row of a pipeline with the same key order.
 */

export interface RowRefs {
  count: number;
  /** Sorted ascending. */
  rowIndex: Uint32Array;
  /** Where the row's bytes are in its file, to read a page of records with ranged reads. */
  offset: Float64Array;
  length: Uint32Array;
}

export interface MultisetDiff {
  baseCount: number;
  compareCount: number;
  unchanged: number;
  removed: RowRefs;
  added: RowRefs;
}

export interface DiffOptions {
  base: ReadableStream<Uint8Array>;
  compare: ReadableStream<Uint8Array>;
  /** Rows expected in both files together; sets the number of partitions. */
  expectedRows: number;
  /** Rows (both sides) a partition should hold. */
  rowsPerPartition?: number;
  tmpDir?: string;
}

export const DEFAULT_ROWS_PER_PARTITION = 1 << 18;
const REC_WORDS = 8; // 32 bytes: 4 digest words, rowIndex, length, offset (float64)
const BUF_RECORDS = 4096; // 128 KiB per partition buffer
const SEED = 0x9e3779b97f4a7c15n;

export async function multisetDiff(opts: DiffOptions): Promise<MultisetDiff> {
  const per = opts.rowsPerPartition ?? DEFAULT_ROWS_PER_PARTITION;
  let partitions = 1;
  while (partitions * per < opts.expectedRows && partitions < 4096) partitions *= 2;
  const dir = partitions > 1 ? await mkdtemp(join(opts.tmpDir ?? tmpdir(), "fps-delta-")) : null;
  try {
    const base = new Partitions(partitions, dir, "b");
    const compare = new Partitions(partitions, dir, "c");
    const [baseCount, compareCount] = await Promise.all([digestRows(opts.base, base), digestRows(opts.compare, compare)]);
    const removed = new Collector();
    const added = new Collector();
    const table = new Table();
    for (let p = 0; p < partitions; p++) {
      diffPartition(await base.read(p), await compare.read(p), table, removed, added);
    }
    await Promise.all([base.close(), compare.close()]);
    return {
      baseCount,
      compareCount,
      unchanged: baseCount - removed.count,
      removed: removed.sorted(baseCount),
      added: added.sorted(compareCount),
    };
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

async function digestRows(stream: ReadableStream<Uint8Array>, out: Partitions): Promise<number> {
  const words = new Uint32Array(4);
  const wide = new BigUint64Array(words.buffer);
  const splitter = new RowSplitter((buf, start, end, rowIndex, offset) => {
    const row = buf.subarray(start, end);
    wide[0] = Bun.hash.xxHash3(row);
    wide[1] = Bun.hash.wyhash(row, SEED);
    out.add(words, rowIndex, end - start, offset);
  });
  try {
    for await (const chunk of stream) {
      streamed(chunk.byteLength);
      splitter.push(chunk);
      await out.drain();
    }
    splitter.end();
    await out.drain();
    await out.finish();
  } catch (e) {
    await out.close();
    throw e;
  }
  return splitter.rows;
}

interface Block {
  u32: Uint32Array;
  f64: Float64Array;
  n: number;
}

/** Views over a whole buffer of records, of which the first `n` are filled. */
function block(buffer: ArrayBuffer, n: number): Block {
  return { u32: new Uint32Array(buffer), f64: new Float64Array(buffer), n };
}

/** Records of one side, by partition: in memory, or appended to one temporary file a partition. */
class Partitions {
  private readonly current: Block[] = [];
  private readonly memory: Block[][] = [];
  private readonly files: (FileHandle | null)[] = [];
  private readonly pending: { p: number; block: Block }[] = [];
  private readonly mask: number;
  /** Reused for every partition read back, so reading partitions one by one makes no garbage. */
  private scratch = new ArrayBuffer(0);

  constructor(
    private readonly count: number,
    private readonly dir: string | null,
    private readonly side: string,
  ) {
    this.mask = count - 1;
    for (let p = 0; p < count; p++) {
      this.current.push(block(new ArrayBuffer(BUF_RECORDS * REC_WORDS * 4), 0));
      this.memory.push([]);
      this.files.push(null);
    }
  }

  add(d: Uint32Array, rowIndex: number, length: number, offset: number): void {
    // The table slot comes from the first word; the partition from the last, so the two are independent.
    const p = d[3]! & this.mask;
    const b = this.current[p]!;
    const w = b.n * REC_WORDS;
    b.u32[w] = d[0]!;
    b.u32[w + 1] = d[1]!;
    b.u32[w + 2] = d[2]!;
    b.u32[w + 3] = d[3]!;
    b.u32[w + 4] = rowIndex;
    b.u32[w + 5] = length;
    b.f64[w / 2 + 3] = offset;
    if (++b.n === BUF_RECORDS) {
      this.pending.push({ p, block: b });
      this.current[p] = block(new ArrayBuffer(BUF_RECORDS * REC_WORDS * 4), 0);
    }
  }

  /** Writes out full buffers (called between chunks, so memory stays bounded). */
  async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const { p, block: b } = this.pending.shift()!;
      await this.store(p, b);
    }
  }

  async finish(): Promise<void> {
    for (let p = 0; p < this.count; p++) {
      const b = this.current[p]!;
      if (b.n > 0) await this.store(p, b);
      this.current[p] = block(new ArrayBuffer(0), 0);
    }
  }

  private async store(p: number, b: Block): Promise<void> {
    if (!this.dir) {
      this.memory[p]!.push(b);
      return;
    }
    let fh = this.files[p];
    if (!fh) {
      fh = await open(join(this.dir, `${this.side}${p}`), "w+");
      this.files[p] = fh;
    }
    await fh.write(new Uint8Array(b.u32.buffer, 0, b.n * REC_WORDS * 4));
  }

  async read(p: number): Promise<Block[]> {
    if (!this.dir) return this.memory[p]!;
    if (!this.files[p]) return [];
    const fh = this.files[p]!;
    this.files[p] = null;
    try {
      const { size } = await fh.stat();
      if (this.scratch.byteLength < size) this.scratch = new ArrayBuffer(size);
      let at = 0;
      while (at < size) {
        const { bytesRead } = await fh.read(new Uint8Array(this.scratch, at, size - at), 0, size - at, at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      return [block(this.scratch, at / (REC_WORDS * 4))];
    } finally {
      await fh.close();
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.files.map((f) => f?.close().catch(() => {})));
    this.files.fill(null);
  }
}

/** Changed rows as found, partition by partition; sorted by row index at the end. */
class Collector {
  count = 0;
  private rowIndex = new Uint32Array(1024);
  private offset = new Float64Array(1024);
  private length = new Uint32Array(1024);

  push(rowIndex: number, offset: number, length: number): void {
    if (this.count === this.rowIndex.length) {
      const grow = <T extends Uint32Array | Float64Array>(a: T, make: (n: number) => T) => {
        const b = make(a.length * 2);
        b.set(a);
        return b;
      };
      this.rowIndex = grow(this.rowIndex, (n) => new Uint32Array(n));
      this.offset = grow(this.offset, (n) => new Float64Array(n));
      this.length = grow(this.length, (n) => new Uint32Array(n));
    }
    this.rowIndex[this.count] = rowIndex;
    this.offset[this.count] = offset;
    this.length[this.count] = length;
    this.count++;
  }

  /** Row indexes are unique on one side and below `rows`: a counting sort. */
  sorted(rows: number): RowRefs {
    const at = new Int32Array(rows).fill(-1);
    for (let i = 0; i < this.count; i++) at[this.rowIndex[i]!] = i;
    const out: RowRefs = {
      count: this.count,
      rowIndex: new Uint32Array(this.count),
      offset: new Float64Array(this.count),
      length: new Uint32Array(this.count),
    };
    let k = 0;
    for (let r = 0; r < rows; r++) {
      const i = at[r]!;
      if (i === -1) continue;
      out.rowIndex[k] = r;
      out.offset[k] = this.offset[i]!;
      out.length[k] = this.length[i]!;
      k++;
    }
    return out;
  }
}

/** An open-addressing table from digest to counts, cleared and reused for each partition. */
class Table {
  cap = 0;
  keys = new Uint32Array(0);
  used = new Uint8Array(0);
  inBase = new Uint32Array(0);
  inCompare = new Uint32Array(0);
  baseSlots = new Int32Array(0);

  prepare(entries: number, baseRows: number): void {
    let cap = 16;
    while (cap < entries * 1.5) cap *= 2;
    if (cap > this.cap) {
      this.cap = cap;
      this.keys = new Uint32Array(cap * 4);
      this.used = new Uint8Array(cap);
      this.inBase = new Uint32Array(cap);
      this.inCompare = new Uint32Array(cap);
    } else {
      this.used.fill(0);
      this.inBase.fill(0);
      this.inCompare.fill(0);
    }
    if (this.baseSlots.length < baseRows) this.baseSlots = new Int32Array(baseRows);
  }
}

function diffPartition(base: Block[], compare: Block[], table: Table, removed: Collector, added: Collector): void {
  let nb = 0;
  let nc = 0;
  for (const b of base) nb += b.n;
  for (const b of compare) nc += b.n;
  if (nb + nc === 0) return;
  table.prepare(nb + nc, nb);
  const { keys, used, inBase, inCompare, baseSlots } = table;
  const mask = table.cap - 1;

  const slotOf = (u: Uint32Array, w: number): number => {
    const k0 = u[w]!;
    const k1 = u[w + 1]!;
    const k2 = u[w + 2]!;
    const k3 = u[w + 3]!;
    let i = k0 & mask;
    for (;;) {
      if (used[i] === 0) {
        used[i] = 1;
        const s = i * 4;
        keys[s] = k0;
        keys[s + 1] = k1;
        keys[s + 2] = k2;
        keys[s + 3] = k3;
        return i;
      }
      const s = i * 4;
      if (keys[s] === k0 && keys[s + 1] === k1 && keys[s + 2] === k2 && keys[s + 3] === k3) return i;
      i = (i + 1) & mask;
    }
  };

  let j = 0;
  for (const b of base) {
    for (let r = 0; r < b.n; r++) {
      const slot = slotOf(b.u32, r * REC_WORDS);
      baseSlots[j++] = slot;
      inBase[slot]!++;
    }
  }
  for (const b of compare) {
    for (let r = 0; r < b.n; r++) {
      const w = r * REC_WORDS;
      const slot = slotOf(b.u32, w);
      if (++inCompare[slot]! > inBase[slot]!) added.push(b.u32[w + 4]!, b.f64[w / 2 + 3]!, b.u32[w + 5]!);
    }
  }
  // Reuse the base counts as "seen so far": a base row past the compare's count of its kind is removed.
  inBase.fill(0);
  j = 0;
  for (const b of base) {
    for (let r = 0; r < b.n; r++) {
      const w = r * REC_WORDS;
      const slot = baseSlots[j++]!;
      if (++inBase[slot]! > inCompare[slot]!) removed.push(b.u32[w + 4]!, b.f64[w / 2 + 3]!, b.u32[w + 5]!);
    }
  }
}
