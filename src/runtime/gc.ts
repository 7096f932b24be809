import { edenGC, fullGC } from "bun:jsc";

/**
 * When the service asks for garbage collections, in one place.
 *
 * JavaScriptCore's collection budgets follow the machine's RAM, so on its own
 * it collects late: a thread that moves a large file through short-lived
 * buffers, strings and rows grows by hundreds of MiB before it does. Each
 * kind of traffic below counts its work and collects at a pace measured for
 * it (docs/decisions/engine.md, "Memory"; docs/decisions/sftp.md).
 * `fullGC`/`edenGC` from bun:jsc, not `Bun.gc(true)`, which also throws away
 * compiled code, except where only that brought RSS down (`transferred`).
 */

/** Counts work (bytes, rows); every `every` units an eden collection, every `fullEvery`-th one full. */
export class Collector {
  private since = 0;
  private collections = 0;

  constructor(
    private readonly every: number,
    private readonly fullEvery: number,
  ) {}

  add(units: number): void {
    this.since += units;
    if (this.since < this.every) return;
    this.since = 0;
    if (++this.collections % this.fullEvery === 0) fullGC();
    else edenGC();
  }
}

/**
 * The engine's row pump, one per run in each worker: a collection about every
 * 8,192 rows, every second one full. Each row leaves about 1.3 KB of
 * short-lived strings, arrays and objects, and a worker's resident memory grew
 * by 150+ MB on a large file. The pump adds a batch's rows once the batch is
 * written and emptied (and the CSV reader hands out each parsed piece whole,
 * src/engine/parse/csv.ts), so nothing parsed is alive then: an eden
 * collection frees nearly everything and promotes almost nothing, and the
 * full one after it frees what was promoted.
 * On the bench file and the 1 GB file: a full collection every 16,384 rows
 * 1.27 s / 280 MiB peak; eden every 8,192 with every second one full 1.13 s /
 * 260 MiB; every third one full 1.06 s but 360-400 MiB.
 */
export function rowCollector(): Collector {
  return new Collector(8_192, 2);
}

/**
 * Bytes a request streams through the service thread: an upload being
 * stored, a search, a delta, a page of a processed file. Each leaves garbage
 * in proportion to its bytes (body chunks, decoded text and its lower-cased
 * copy, slices): searching 10 processed files of 18 MB took the service from
 * ~260 MiB to 555-691 MiB. Counted across all requests of the process: an
 * eden collection every 16 MiB (~1-2 ms), every fourth one full (~13 ms).
 */
const streamedBytes = new Collector(16 * 1024 * 1024, 4);

/** Counts `bytes` streamed through this thread; collects when enough have passed. */
export function streamed(bytes: number): void {
  streamedBytes.add(bytes);
}

/** A full collection now: after a large upload, before the run's workers add their own memory. */
export function collectNow(): void {
  fullGC();
}

/**
 * Bytes the hosted SFTP server moves. Every SFTP request arrives in (and
 * every answer leaves through) freshly allocated buffers: ssh2 decrypts each
 * packet into a new one and joins packets that span two channel messages
 * into another. A 1 GiB upload thus leaves well over a GiB of short-lived
 * garbage, and RSS climbed ~250 MiB above the service's baseline before a
 * full collection (eden collections and `Bun.gc(false)` did not bring it
 * down). So the server watches its own RSS as bytes move: every 8 MiB it
 * reads it, and when it has grown more than 64 MiB since the last
 * collection it runs a full one. Small transfers never trigger it.
 */
const CHECK_EVERY_BYTES = 8 * 1024 * 1024;
const GROWTH_LIMIT_BYTES = 64 * 1024 * 1024;

let sinceCheck = 0;
let baseline = 0;

export function transferred(bytes: number): void {
  sinceCheck += bytes;
  if (sinceCheck < CHECK_EVERY_BYTES) return;
  sinceCheck = 0;
  const rss = process.memoryUsage.rss();
  if (baseline === 0 || rss < baseline) {
    baseline = rss;
    return;
  }
  if (rss - baseline < GROWTH_LIMIT_BYTES) return;
  Bun.gc(true);
  baseline = process.memoryUsage.rss();
}
