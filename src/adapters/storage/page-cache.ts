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
 */
type Fadvise = (fd: number, offset: number, length: number, advice: number) => number;

const POSIX_FADV_DONTNEED = 4;
let fadvise: Fadvise | null | undefined;

function load(): Fadvise | null {
  if (fadvise !== undefined) return fadvise;
  fadvise = null;
  if (process.platform !== "linux") return null;
  try {
    // biome-ignore lint: bun:ffi is loaded only here, on first use.
    const { dlopen, FFIType } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", { posix_fadvise: { args: [FFIType.i32, FFIType.i64, FFIType.i64, FFIType.i32], returns: FFIType.i32 } });
    const f = libc.symbols.posix_fadvise;
    fadvise = (fd, offset, length, advice) => f(fd, offset, length, advice) as number;
  } catch {
    fadvise = null;
  }
  return fadvise;
}

/** Drops the cached pages of bytes [offset, offset + length) of the open file `fd` (length 0: to its end) once they are on disk. */
export function dropWritten(fd: number, offset = 0, length = 0): void {
  load()?.(fd, offset, length, POSIX_FADV_DONTNEED);
}
