import { DEFAULT_BUFFER, Hub } from "./hub";
import type { EventBus } from "./port";

/** One process (the embedded SQLite default): events go straight to this process's subscribers. */
export function createMemoryEventBus(opts: { bufferSize?: number } = {}): EventBus & { readonly subscribers: number } {
  const hub = new Hub(opts.bufferSize ?? DEFAULT_BUFFER);
  let closed = false;
  return {
    async publish(event) {
      if (!closed) hub.deliver(event);
    },
    subscribe: (filter, signal) => hub.subscribe(filter, signal),
    // One process owns the database: there is no other instance to tell.
    async signal() {},
    onSignal: () => () => {},
    async close() {
      closed = true;
      hub.closeAll();
    },
    get subscribers() {
      return hub.size;
    },
  };
}
