/**
 * Dropping a written file's pages from the operating system's page cache
 * once they are on disk (posix_fadvise POSIX_FADV_DONTNEED, as HDFS's
 * "drop cache behind writes"; docs/decisions/storage.md, "Page cache").
 *
 * A pipeline writes far more than it reads back soon: a run of a 89 MB CSV
 * writes the original and a 181 MB processed file. Kept in the page cache,
 * every run pushes out pages that are read again (the database's), and
 * takes memory the kernel has to find first: on a virtual machine whose
 * freed memory goes back to its host (this service's machine kind), each
 * newly cached page costs a fault on the host, and writing that 181 MB file
 * took 0.43-0.70 s of system time cached against 0.09 s dropped behind each
 * sync, where the freed pages are used again for the next writes.
 *
 * Only clean pages are dropped, so this is called after an fsync or
 * fdatasync of the range; it never loses data, and a later read of the file
 * comes from disk. Node has no binding for it, so libc's is called through
 * bun:ffi; where that is unavailable (not Linux, no glibc) it does nothing.
 *
 * Freeing the pages takes the kernel ~0.3 ms per MB in the calling thread.
 * On the service's thread that stalled everything it coordinates (the
 * engine's stripes: ~40 ms per 1M-row run), so `dropWrittenSoon` hands the
 * call to a small worker thread of its own; engine workers call
 * `dropWritten` directly.
 */
import { isMainThread } from "node:worker_threads";

type Fadvise = (fd: number, offset: number, length: number, advice: number) => number;

const POSIX_FADV_DONTNEED = 4;
let fadvise: Fadvise | null | undefined;

function load(): Fadvise | null {
  if (fadvise !== undefined) return fadvise;
  fadvise = null;
  if (process.platform !== "linux") return null;
  try {
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", { posix_fadvise: { args: [FFIType.i32, FFIType.i64, FFIType.i64, FFIType.i32], returns: FFIType.i32 } });
    const f = libc.symbols.posix_fadvise;
    fadvise = (fd, offset, length, advice) => f(fd, offset, length, advice) as number;
  } catch {
    fadvise = null;
  }
  return fadvise;
}

/** Drops the cached pages of bytes [offset, offset + length) of the open file `fd` (length 0: to its end), in this thread. */
export function dropWritten(fd: number, offset = 0, length = 0): void {
  load()?.(fd, offset, length, POSIX_FADV_DONTNEED);
}

interface DropRequest {
  id: number;
  fd: number;
  offset: number;
  length: number;
}

let dropper: Worker | null = null;
let dropperFailed = false;
let nextId = 0;
const waiting = new Map<number, () => void>();

function startDropper(): Worker | null {
  if (dropper || dropperFailed) return dropper;
  try {
    const w = new Worker(new URL("./page-cache-worker.ts", import.meta.url).href);
    // It keeps the process alive only while a drop is pending.
    (w as unknown as Bun.Worker).unref();
    w.addEventListener("message", (event) => {
      const done = waiting.get((event as MessageEvent<number>).data);
      waiting.delete((event as MessageEvent<number>).data);
      if (waiting.size === 0) (w as unknown as Bun.Worker).unref();
      done?.();
    });
    const fail = () => {
      // A lost worker: what it had is done here instead, and so is everything after.
      dropperFailed = true;
      dropper = null;
      for (const done of waiting.values()) done();
      waiting.clear();
    };
    w.addEventListener("error", fail);
    w.addEventListener("close", fail);
    dropper = w;
  } catch {
    dropperFailed = true;
  }
  return dropper;
}

/**
 * `dropWritten` on the dropper thread when called on the service's thread,
 * in place on any other; resolves once done (the caller keeps `fd` open
 * until then). Falls back to this thread if the dropper is gone.
 */
export function dropWrittenSoon(fd: number, offset = 0, length = 0): Promise<void> {
  if (!load()) return Promise.resolve();
  // An engine worker thread has nothing else to keep going meanwhile: it drops in place.
  const w = isMainThread ? startDropper() : null;
  if (!w) {
    dropWritten(fd, offset, length);
    return Promise.resolve();
  }
  const id = nextId++;
  return new Promise<void>((resolve) => {
    waiting.set(id, resolve);
    (w as unknown as Bun.Worker).ref();
    w.postMessage({ id, fd, offset, length } satisfies DropRequest);
  });
}
