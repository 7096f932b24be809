import { createObjectStore } from "../adapters/storage/index";
import type { StorageConfig } from "../adapters/storage/port";
import type { EnginePool, ProcessOutcome, ProcessRequest } from "./types";
import type { WorkerReply } from "./worker";

export interface EnginePoolOptions {
  /** Most worker threads at once. */
  size: number;
  /** The worker script (tests substitute one that misbehaves); default src/engine/worker.ts. */
  workerUrl?: string | URL;
}

interface Job {
  id: number;
  req: ProcessRequest;
  signal?: AbortSignal;
  onAbort?: () => void;
  resolve(outcome: ProcessOutcome): void;
  reject(err: unknown): void;
}

interface Slot {
  // Bun's own Worker type carries ref/unref (the global one may be the DOM's).
  worker: Bun.Worker;
  job: Job | null;
}

const DEFAULT_WORKER = new URL("./worker.ts", import.meta.url);

function failedOutcome(errorMessage: string, internalError?: string): ProcessOutcome {
  return {
    ok: false,
    errorMessage,
    internalError,
    counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 },
    errors: [],
    processed: null,
    rejects: null,
    processMs: 0,
  };
}

/**
 * Bun Worker threads that run processFile, so parsing never blocks the HTTP
 * server. Workers start on first use (the admin CLI creates a pool and
 * never starts one), up to `size`; further requests wait in order. A worker
 * that dies or whose request is aborted is terminated and a fresh one is
 * started for the next request.
 */
export interface EnginePoolStats {
  /** Worker threads alive. */
  workers: number;
  busy: number;
  queued: number;
}

export function createEnginePool(opts: EnginePoolOptions): EnginePool & { stats(): EnginePoolStats } {
  const size = Math.max(1, opts.size);
  const workerUrl = opts.workerUrl ?? DEFAULT_WORKER;
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;
  const stores = new Map<string, ReturnType<typeof createObjectStore>>();

  // A terminated worker may have been writing; its puts are atomic, but an
  // earlier attempt's files could remain, and a failed run must leave none.
  async function cleanUp(req: ProcessRequest): Promise<void> {
    try {
      const key = JSON.stringify(req.storage);
      let store = stores.get(key);
      if (!store) {
        store = createObjectStore(req.storage as StorageConfig);
        stores.set(key, store);
      }
      await Promise.all([store.delete(req.processedKey), store.delete(req.rejectsKey)]);
    } catch {
      // Best effort: the next attempt overwrites these keys.
    }
  }

  function finish(job: Job): void {
    if (job.onAbort) job.signal?.removeEventListener("abort", job.onAbort);
  }

  function retire(slot: Slot): void {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    slot.worker.terminate();
  }

  function crashed(slot: Slot, detail: string): void {
    if (!slots.includes(slot)) return;
    const job = slot.job;
    slot.job = null;
    retire(slot);
    if (job) {
      finish(job);
      void cleanUp(job.req).then(() =>
        job.resolve(failedOutcome(`The engine worker stopped unexpectedly while processing ${job.req.filename} (${detail}); the run can be retried.`, detail)),
      );
    }
    dispatch();
  }

  function spawn(): Slot {
    const worker = new Worker(workerUrl) as unknown as Bun.Worker;
    const slot: Slot = { worker, job: null };
    worker.addEventListener("message", (event) => {
      const reply = (event as MessageEvent<WorkerReply>).data;
      const job = slot.job;
      if (!job || reply.id !== job.id) return;
      slot.job = null;
      worker.unref();
      finish(job);
      job.resolve(reply.outcome);
      dispatch();
    });
    worker.addEventListener("error", (event) => crashed(slot, (event as ErrorEvent).message || "uncaught error in the worker"));
    worker.addEventListener("close", (event) => crashed(slot, `worker exited with code ${(event as CloseEvent).code ?? "unknown"}`));
    slots.push(slot);
    return slot;
  }

  function dispatch(): void {
    while (queue.length > 0 && !closed) {
      const slot = slots.find((s) => s.job === null) ?? (slots.length < size ? spawn() : null);
      if (!slot) return;
      const job = queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, req: job.req });
    }
  }

  function abort(job: Job): void {
    const queued = queue.indexOf(job);
    if (queued >= 0) {
      queue.splice(queued, 1);
    } else {
      const slot = slots.find((s) => s.job === job);
      if (!slot) return;
      slot.job = null;
      retire(slot);
      dispatch();
    }
    finish(job);
    const reason = job.signal?.reason ?? new DOMException("The operation was aborted.", "AbortError");
    void cleanUp(job.req).then(() => job.reject(reason));
  }

  return {
    stats: () => ({ workers: slots.length, busy: slots.filter((s) => s.job !== null).length, queued: queue.length }),
    process(req, signal) {
      if (closed) return Promise.reject(new Error("engine pool is closed"));
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<ProcessOutcome>((resolve, reject) => {
        const job: Job = { id: nextId++, req, signal, resolve, reject };
        if (signal) {
          job.onAbort = () => abort(job);
          signal.addEventListener("abort", job.onAbort, { once: true });
        }
        queue.push(job);
        dispatch();
      });
    },
    async close() {
      closed = true;
      const err = new Error("engine pool closed");
      for (const job of queue.splice(0)) {
        finish(job);
        job.reject(err);
      }
      for (const slot of slots.splice(0)) {
        const job = slot.job;
        slot.job = null;
        slot.worker.terminate();
        if (job) {
          finish(job);
          job.reject(err);
        }
      }
    },
  };
}
