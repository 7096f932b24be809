import { edenGC, fullGC } from "bun:jsc";

/**
 * Bounds the service thread's memory while a request streams through a large
 * file: an upload being stored, a search, a delta, a page of a processed
 * file. Each leaves garbage in proportion to the bytes (body chunks, decoded
 * text and its lower-cased copy, slices), and JavaScriptCore, whose budgets
 * follow the machine's RAM, collects it late: searching 10 processed files
 * of 18 MB took the service from ~260 MiB to 555-691 MiB.
 *
 * Every COLLECT_EVERY_BYTES streamed (counted across all requests of the
 * process) an eden collection runs (~1-2 ms here), every FULL_EVERY-th one a
 * full collection (~13 ms: it marks everything alive, the libraries
 * included). `fullGC`/`edenGC` from bun:jsc, not `Bun.gc(true)`, which also
 * throws away compiled code. Measured in docs/decisions/engine.md ("Memory").
 */
const COLLECT_EVERY_BYTES = 16 * 1024 * 1024;
const FULL_EVERY = 4;

let sinceCollect = 0;
let collections = 0;

/** Counts `bytes` streamed through this thread; collects when enough have passed. */
export function streamed(bytes: number): void {
  sinceCollect += bytes;
  if (sinceCollect < COLLECT_EVERY_BYTES) return;
  sinceCollect = 0;
  if (++collections % FULL_EVERY === 0) fullGC();
  else edenGC();
}
