import type { RunEvent, RunEventFilter } from "./port";

export const DEFAULT_BUFFER = 256;

const matches = (f: RunEventFilter, e: RunEvent) =>
  e.workspaceId === f.workspaceId && (f.runId === undefined || e.runId === f.runId) && (f.pipelineId === undefined || e.pipelineId === f.pipelineId);

/**
 * Fan-out to the subscribers of one process. Each subscriber has a buffer
 * of at most `bufferSize` events; when it is full the oldest is dropped and
 * the next event handed out carries `missed`. Status events are hints that
 * the run changed (the newest one tells the current status), so keeping the
 * newest serves a slow reader better than closing it, and memory stays
 * bounded whatever the reader does.
 */
export class Hub {
  private readonly subscribers = new Set<Subscriber>();
  constructor(private readonly bufferSize: number = DEFAULT_BUFFER) {}

  deliver(event: RunEvent): void {
    for (const s of this.subscribers) if (matches(s.filter, event)) s.push(event);
  }

  subscribe(filter: RunEventFilter, signal?: AbortSignal): AsyncIterableIterator<RunEvent> {
    const sub = new Subscriber({ ...filter }, this.bufferSize, () => this.subscribers.delete(sub));
    if (signal?.aborted) sub.end();
    else {
      this.subscribers.add(sub);
      signal?.addEventListener("abort", () => sub.end(), { once: true });
    }
    return sub;
  }

  /** Subscribers currently attached (for tests and diagnostics). */
  get size(): number {
    return this.subscribers.size;
  }

  /** Ends every subscription: their iterators finish once drained of nothing (buffered events are dropped). */
  closeAll(): void {
    for (const s of [...this.subscribers]) s.end();
  }
}

type Waiter = (r: IteratorResult<RunEvent>) => void;

class Subscriber implements AsyncIterableIterator<RunEvent> {
  private readonly queue: RunEvent[] = [];
  private readonly waiters: Waiter[] = [];
  private missed = 0;
  private done = false;

  constructor(
    readonly filter: RunEventFilter,
    private readonly bufferSize: number,
    private readonly detach: () => void,
  ) {}

  push(event: RunEvent): void {
    if (this.done) return;
    const waiter = this.waiters.shift();
    if (waiter) return waiter({ value: this.mark(event), done: false });
    this.queue.push(event);
    if (this.queue.length > this.bufferSize) {
      this.queue.shift();
      this.missed++;
    }
  }

  private mark(event: RunEvent): RunEvent {
    if (this.missed === 0) return event;
    const marked = { ...event, missed: this.missed };
    this.missed = 0;
    return marked;
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    this.queue.length = 0;
    this.detach();
    for (const w of this.waiters.splice(0)) w({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<RunEvent>> {
    const event = this.queue.shift();
    if (event) return Promise.resolve({ value: this.mark(event), done: false });
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  return(): Promise<IteratorResult<RunEvent>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error?: unknown): Promise<IteratorResult<RunEvent>> {
    this.end();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}
