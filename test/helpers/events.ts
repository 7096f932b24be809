/**
 * Reads an async iterator with time limits, without losing a value: a
 * next() that is still pending when a limit passes is kept for the next read.
 */
export class Reader<T> {
  private pending: Promise<IteratorResult<T>> | null = null;
  constructor(private readonly it: AsyncIterator<T>) {}

  private next(): Promise<IteratorResult<T>> {
    this.pending ??= this.it.next();
    return this.pending;
  }

  /** The next `n` values, failing after `ms` instead of hanging. */
  async take(n: number, ms = 5000): Promise<T[]> {
    const out: T[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), ms);
    });
    try {
      while (out.length < n) {
        const r = await Promise.race([this.next(), deadline]);
        if (r === "late") throw new Error(`only ${out.length} of ${n} values arrived within ${ms} ms`);
        this.pending = null;
        if (r.done) throw new Error(`iterator ended after ${out.length} of ${n} values`);
        out.push(r.value);
      }
      return out;
    } finally {
      clearTimeout(timer);
    }
  }

  /** True when nothing arrives within `ms`. */
  async quiet(ms: number): Promise<boolean> {
    const r = await Promise.race([this.next(), Bun.sleep(ms).then(() => "late" as const)]);
    return r === "late";
  }

  /** Whether the iterator has ended (waiting up to `ms`). */
  async ended(ms = 5000): Promise<boolean> {
    const r = await Promise.race([this.next(), Bun.sleep(ms).then(() => "late" as const)]);
    if (r === "late") return false;
    this.pending = null;
    return r.done === true;
  }
}
