import { createObjectStore } from "../adapters/storage/index";
import type { StorageConfig } from "../adapters/storage/port";
import { rm } from "node:fs/promises";
import type { PartResult, PartSpec } from "./split";
import { DEFAULT_MIN_SPLIT_BYTES, type EnginePool, type ProcessOutcome, type ProcessRequest } from "./types";
import type { WorkerReply, WorkerRequest } from "./worker";

export interface EnginePoolOptions {
  /** Most worker threads at once. */
  size: number;
  /** The worker script (tests substitute one that misbehaves); default src/engine/worker.ts. */
  workerUrl?: string | URL;
  /**
   * Originals at least this large may be read by several idle workers at once
   * (src/engine/split.ts; default 8 MiB). Tests lower it to split small files.
   */
  minSplitBytes?: number;
}

interface Job {
  id: number;
  req: ProcessRequest;
  /** The helper ranges of this job's file, once its lead has split it. */
  parts?: PartSpec[];
  /** Set once the lead no longer wants its helpers' rows (it finished or reads the file alone): late results are discarded. */
  partsReleased?: boolean;
  signal?: AbortSignal;
  onAbort?: () => void;
  resolve(outcome: ProcessOutcome): void;
  reject(err: unknown): void;
}

/** A range of a job's file that a helper worker reads. */
interface PartTask {
  id: number;
  lead: Job;
  spec: PartSpec;
}

interface Slot {
  // Bun's own Worker type carries ref/unref (the global one may be the DOM's).
  worker: Bun.Worker;
  job: Job | null;
  /** Held idle for a job that may split its file (until its plan arrives). */
  heldFor: Job | null;
  /** A helper's range of another job's file. */
  part: PartTask | null;
}

const idle = (s: Slot) => s.job === null && s.heldFor === null && s.part === null;

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
 * never starts one), up to `size`: a file that may be split across workers
 * (its size unknown, or at least `minSplitBytes`) starts them all at once,
 * so that they load while its lead plans. Further requests wait in order. A worker
 * that dies or whose request is aborted is terminated and a fresh one is
 * started for the next request.
 */
export interface EnginePoolStats {
  /** Worker threads alive. */
  workers: number;
  busy: number;
  queued: number;
}

/** A part's temp files; the pool imports no engine code, so this is not split.ts's removeTemp. */
function removeParts(parts: readonly PartSpec[]): void {
  void Promise.all(parts.flatMap((p) => [rm(p.rowsPath, { force: true }), rm(p.rejectsPath, { force: true })])).catch(() => {});
}

export function createEnginePool(opts: EnginePoolOptions): EnginePool & { stats(): EnginePoolStats; warm(): void } {
  const size = Math.max(1, opts.size);
  const workerUrl = opts.workerUrl ?? DEFAULT_WORKER;
  const minSplitBytes = opts.minSplitBytes;
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;
  const canSpawn = () => slots.length < size;
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
    releaseHelpers(job);
  }

  const post = (slot: Slot, msg: WorkerRequest) => slot.worker.postMessage(msg);

  /**
   * Frees the workers held for `job`, stops those still reading its parts,
   * and removes every part's temp files: a helper that finished after its
   * lead gave up wrote them after the lead's own clean-up.
   */
  function releaseHelpers(job: Job): void {
    job.partsReleased = true;
    for (const slot of [...slots]) {
      if (slot.heldFor === job) slot.heldFor = null;
      if (slot.part?.lead === job) {
        slot.part = null;
        retire(slot);
      }
    }
    if (job.parts) removeParts(job.parts);
  }

  /** The lead's plan: its helper ranges go to the workers held for it; the rest are freed. */
  function startParts(job: Job, plan: PartSpec[]): void {
    const held = slots.filter((s) => s.heldFor === job);
    for (const slot of held) slot.heldFor = null;
    job.parts = plan;
    plan.forEach((spec, i) => {
      const slot = held[i];
      if (!slot || !slots.includes(slot)) {
        // Cannot happen (the plan never asks for more than was held); tell the lead so it reads alone.
        relay(job, { index: spec.index, ok: false, counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], rejects: false, rowsSize: 0, detail: "no helper" });
        return;
      }
      slot.part = { id: nextId++, lead: job, spec };
      slot.worker.ref();
      post(slot, { type: "part", id: slot.part.id, req: job.req, part: spec });
    });
  }

  function relay(lead: Job, result: PartResult): void {
    const leadSlot = slots.find((s) => s.job === lead);
    if (leadSlot) post(leadSlot, { type: "partResult", id: lead.id, result });
  }

  function retire(slot: Slot): void {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    slot.worker.terminate();
  }

  function crashed(slot: Slot, detail: string): void {
    if (!slots.includes(slot)) return;
    const job = slot.job;
    const part = slot.part;
    slot.job = null;
    slot.part = null;
    slot.heldFor = null;
    retire(slot);
    if (part) {
      // The lead reads the whole file alone instead.
      relay(part.lead, { index: part.spec.index, ok: false, counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], rejects: false, rowsSize: 0, detail });
      removeParts([part.spec]);
    }
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
    // Only a worker with something to do keeps the process alive (ref'd while it has a job or a part).
    worker.unref();
    const slot: Slot = { worker, job: null, heldFor: null, part: null };
    worker.addEventListener("message", (event) => {
      const reply = (event as MessageEvent<WorkerReply>).data;
      if ("partResult" in reply) {
        const part = slot.part;
        if (!part || reply.id !== part.id) return;
        slot.part = null;
        worker.unref();
        if (part.lead.partsReleased) removeParts([part.spec]);
        else relay(part.lead, reply.partResult);
        dispatch();
        return;
      }
      const job = slot.job;
      if (!job || reply.id !== job.id) return;
      if ("plan" in reply) {
        startParts(job, reply.plan);
        dispatch();
        return;
      }
      if ("cancelParts" in reply) {
        releaseHelpers(job);
        dispatch();
        return;
      }
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
      const slot = slots.find(idle) ?? (canSpawn() ? spawn() : null);
      if (!slot) return;
      const job = queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      // Nobody else waiting: the other idle workers are held for this file, which may be split across them.
      // Workers not running yet are started now, so that they load while the lead plans the split.
      let helpers = 0;
      if (queue.length === 0 && (job.req.size === undefined || job.req.size >= (minSplitBytes ?? DEFAULT_MIN_SPLIT_BYTES))) {
        while (canSpawn()) spawn();
        for (let free = slots.find(idle); free; free = slots.find(idle)) {
          free.heldFor = job;
          post(free, { type: "prepare", req: job.req });
          helpers++;
        }
      }
      post(slot, { type: "process", id: job.id, req: job.req, helpers, minSplitBytes });
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
      finish(job);
      dispatch();
    }
    finish(job);
    const reason = job.signal?.reason ?? new DOMException("The operation was aborted.", "AbortError");
    void cleanUp(job.req).then(() => job.reject(reason));
  }

  return {
    stats: () => ({ workers: slots.length, busy: slots.filter((s) => !idle(s)).length, queued: queue.length }),
    warm() {
      if (closed) return;
      while (canSpawn()) spawn();
    },
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
