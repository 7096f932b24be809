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

export interface SseMessage {
  event: string;
  data: string;
  id?: string;
}

/** Server-sent events of a response body, one message per blank-line-separated block (comments skipped). */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
        const msg: SseMessage = { event: "message", data: "" };
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line === "" || line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "data") data.push(value);
          else if (field === "event") msg.event = value;
          else if (field === "id") msg.id = value;
        }
        if (data.length === 0 && msg.event === "message") continue;
        msg.data = data.join("\n");
        yield msg;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
