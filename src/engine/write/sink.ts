import type { ObjectInfo, ObjectStore } from "../../adapters/storage/port";

/**
 * Text written here streams into `store.put(key, body)` as it is produced:
 * small writes are gathered into chunks of about FLUSH_CHARS, and `write`
 * waits while MAX_QUEUED chunks are not yet taken by the store, so a slow
 * store slows the producer instead of growing memory.
 */
export interface Sink {
  write(text: string): Promise<void>;
  /** Bytes already encoded (a part of the output written by another worker), in order after the text so far. */
  writeBytes(bytes: Uint8Array): Promise<void>;
  /** Ends the body and waits for the store to have the whole object. */
  close(): Promise<ObjectInfo>;
  /** Fails the body (the store then keeps nothing at the key) and waits for the put to settle. */
  abort(reason: Error): Promise<void>;
}

const FLUSH_CHARS = 256 * 1024;
const MAX_QUEUED = 4;

export function openSink(store: ObjectStore, key: string, contentType: string): Sink {
  const queue: Uint8Array[] = [];
  let pending = "";
  let done = false;
  let failure: Error | null = null;
  let wakeConsumer: (() => void) | null = null;
  let wakeProducer: (() => void) | null = null;

  const wake = () => {
    const c = wakeConsumer;
    wakeConsumer = null;
    c?.();
  };
  const wakeP = () => {
    const p = wakeProducer;
    wakeProducer = null;
    p?.();
  };

  async function* body(): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        if (failure) throw failure;
        const chunk = queue.shift();
        if (chunk) {
          wakeP();
          yield chunk;
          continue;
        }
        if (done) return;
        await new Promise<void>((r) => (wakeConsumer = r));
      }
    } finally {
      // The store stopped reading (finished, or gave up on its own error).
      if (!done && !failure) failure = new Error(`storage stopped reading ${key}`);
      wakeP();
    }
  }

  const put = store.put(key, body(), { contentType });
  put.catch((e: unknown) => {
    failure ??= e instanceof Error ? e : new Error(String(e));
    wakeP();
  });

  function flush() {
    if (pending.length === 0) return;
    queue.push(Buffer.from(pending, "utf8"));
    pending = "";
    wake();
  }

  return {
    async write(text) {
      if (failure) throw failure;
      pending += text;
      if (pending.length < FLUSH_CHARS) return;
      flush();
      while (queue.length >= MAX_QUEUED && !failure) await new Promise<void>((r) => (wakeProducer = r));
      if (failure) throw failure;
    },
    async writeBytes(bytes) {
      if (failure) throw failure;
      flush();
      queue.push(bytes);
      wake();
      while (queue.length >= MAX_QUEUED && !failure) await new Promise<void>((r) => (wakeProducer = r));
      if (failure) throw failure;
    },
    async close() {
      if (failure) throw failure;
      flush();
      done = true;
      wake();
      return put;
    },
    async abort(reason) {
      failure ??= reason;
      wake();
      await put.catch(() => {});
    },
  };
}
