import { storeCache } from "../../adapters/storage/index";
import type { StorageConfig } from "../../adapters/storage/port";
import { mayStripe, type SplitPlan, type StripeResult, type StripeSource, type StripeTask } from "../stripe-plan";
import { type GrowingFile, processStriped, type Striped, type StripedInput, type StripeWorkers } from "../stripes";
import { mayUnpack, stripeUnpacked } from "../unpack";
import {
  DEFAULT_MIN_SPLIT_BYTES,
  type EnginePool,
  failedOutcome,
  newEngineProgress,
  type ParseLimits,
  type ProcessOutcome,
  type ProcessRequest,
  PROGRESS_BYTES,
  PROGRESS_ROWS,
} from "../types";
import type { WorkerRequest } from "../worker";
import { idle, type Job, type Slot, WorkerSlots } from "./slots";
import { Speculations } from "./speculation";

export interface EnginePoolOptions {
  /** Most worker threads at once. */
  size: number;
  /** The worker script (tests substitute one that misbehaves); default src/engine/worker.ts. */
  workerUrl?: string | URL;
  /**
   * Originals at least this large may be read by several idle workers at once
   * (src/engine/stripes; default 8 MiB). Tests lower it to split small files.
   */
  minSplitBytes?: number;
  /** Bytes per stripe of a file read by several workers (default 4 MiB); tests lower it. */
  stripeBytes?: number;
  /** How long work done on an arriving file waits for its run's job before it is dropped (default 60 s). */
  adoptWithinMs?: number;
  /**
   * Largest arriving file the pool begins on before it is stored (default
   * 256 MiB). Above it the upload and the processing would share the cores
   * for long enough that nothing is gained, and their memory would add up.
   */
  speculateMaxBytes?: number;
  /** Parse limits from the settings (MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSION_RATIO), applied to every request that does not set its own. */
  limits?: Partial<ParseLimits>;
}

/**
 * Bytes per stripe. Smaller stripes balance the workers better and bound the
 * output held in memory (a 2 MiB CSV stripe renders to ~4.5 MiB of JSON);
 * each costs a message and a header re-read (docs/decisions/engine.md).
 */
const DEFAULT_STRIPE_BYTES = 2 * 1024 * 1024;

/** Stripes outstanding per worker: the next one waits in the worker while it does the current one, so it never waits for the main thread. */
const STRIPES_PER_WORKER = 2;

const DEFAULT_WORKER = new URL("../worker.ts", import.meta.url);

export interface EnginePoolStats {
  /** Worker threads alive. */
  workers: number;
  busy: number;
  queued: number;
}

/**
 * Bun Worker threads that run the engine, so parsing never blocks the HTTP
 * server. Workers start on first use (the admin CLI creates a pool and never
 * starts one), up to `size` (./slots.ts). A file that may be striped (of
 * known size, at least `minSplitBytes`) with nobody else waiting takes every
 * worker: one plans the split while the others compile the schema's
 * validator, then stripes go to whichever is free (src/engine/stripes,
 * coordinated on this thread); anything else, and a striped read that gives
 * up, is read whole by one worker. Further requests wait in order. A worker
 * that dies or whose request is aborted is terminated and a fresh one is
 * started for the next request. A large upload may be read while it arrives
 * (./speculation.ts).
 */
export function createEnginePool(opts: EnginePoolOptions): EnginePool & { stats(): EnginePoolStats; warm(): void } {
  const minSplitBytes = opts.minSplitBytes ?? DEFAULT_MIN_SPLIT_BYTES;
  const stripeBytes = opts.stripeBytes ?? DEFAULT_STRIPE_BYTES;
  const workers = new WorkerSlots(Math.max(1, opts.size), opts.workerUrl ?? DEFAULT_WORKER, () => dispatch());
  const queue: Job[] = [];
  let closed = false;
  const storeFor = storeCache();
  const withLimits = (req: ProcessRequest): ProcessRequest => (opts.limits ? { ...req, limits: { ...opts.limits, ...req.limits } } : req);
  const speculations = new Speculations(
    { workers, quiet: () => !closed && queue.length === 0, withLimits, holdAll, release, runStriped, dispatch },
    { minSplitBytes, speculateMaxBytes: opts.speculateMaxBytes ?? 256 * 1024 * 1024, adoptWithinMs: opts.adoptWithinMs ?? 60_000 },
  );

  // A terminated worker may have been writing; its puts are atomic, but an
  // earlier attempt's files could remain, and a failed run must leave none.
  async function cleanUp(req: ProcessRequest): Promise<void> {
    try {
      const store = storeFor(req.storage as StorageConfig);
      await Promise.all([store.delete(req.processedKey), store.delete(req.rejectsKey)]);
    } catch {
      // Best effort: the next attempt overwrites these keys.
    }
  }

  /** The whole file on one worker. */
  async function whole(slot: Slot, job: Job): Promise<ProcessOutcome> {
    try {
      // A striped read that gave up counted rows this read counts again.
      job.progress.fill(0);
      const reply = await workers.ask(slot, job, { type: "process", id: workers.id(), req: job.req, progress: job.progress });
      if (!("outcome" in reply)) throw new Error("unexpected reply");
      return reply.outcome;
    } catch (e) {
      const detail = e instanceof Error ? e.message : String(e);
      await cleanUp(job.req);
      return failedOutcome(`The engine worker stopped unexpectedly while processing ${job.req.filename} (${detail}); the run can be retried.`, detail);
    }
  }

  /** The workers a striped read may use: the slots held for it, each doing one task at a time. */
  function stripeWorkers(job: Job, held: Slot[]): StripeWorkers {
    // The alive held worker with the fewest stripes outstanding, if it may take one more.
    const free = (depth: number) => {
      let best: Slot | undefined;
      for (const s of held) if (workers.alive(s) && s.pending.size < depth && (!best || s.pending.size < best.pending.size)) best = s;
      return best;
    };
    return {
      width: held.length * STRIPES_PER_WORKER,
      async plan(req, source, headBytes) {
        const slot = free(1);
        if (!slot) return null;
        const reply = await workers.ask(slot, job, { type: "plan", id: workers.id(), req, source, headBytes });
        return "plan" in reply ? reply.plan : null;
      },
      hasIdle: () => free(1) !== undefined,
      async stripe(req, task, spare, idleOnly) {
        const slot = free(idleOnly ? 1 : STRIPES_PER_WORKER);
        if (!slot) throw new Error("no worker left for the stripe");
        const reply = await workers.ask(slot, job, { type: "stripe", id: workers.id(), req, task, spare }, spare);
        if (!("stripe" in reply)) throw new Error("unexpected reply");
        job.progress[PROGRESS_ROWS]! += reply.stripe.counts.total;
        job.progress[PROGRESS_BYTES]! += task.end - task.start;
        return reply.stripe;
      },
    };
  }

  function release(job: Job): void {
    for (const s of job.session ?? []) if (s.heldFor === job) s.heldFor = null;
    job.session = undefined;
  }

  function settle(job: Job, outcome: ProcessOutcome): void {
    if (job.settled) return;
    job.settled = true;
    if (job.onAbort) job.signal?.removeEventListener("abort", job.onAbort);
    release(job);
    job.resolve(outcome);
    dispatch();
  }

  async function runStriped(job: Job, held: Slot[], input: StripedInput): Promise<Striped | null> {
    const store = storeFor(job.req.storage as StorageConfig);
    return processStriped(job.req, store, input, stripeWorkers(job, held), { stripeBytes, signal: job.signal });
  }

  /**
   * Holds `free` and every worker not running yet (started now, so they load
   * while the file is planned) for `job`; all but the planner compile the
   * schema's validator meanwhile. Answers the held slots.
   */
  function holdAll(job: Job, free: Slot[]): Slot[] {
    while (workers.canSpawn()) free.push(workers.spawn());
    for (const s of free) {
      s.heldFor = job;
      s.worker.ref();
    }
    job.session = free;
    for (const s of free.slice(1)) s.worker.postMessage({ type: "prepare", req: job.req } satisfies WorkerRequest);
    return free;
  }

  /** A file read in stripes by `held`; on give-up, read whole by one of them. */
  async function session(job: Job, held: Slot[]): Promise<void> {
    try {
      const striped = mayUnpack(job.req, mayStripe, minSplitBytes)
        ? await stripeUnpacked(job.req, storeFor(job.req.storage as StorageConfig), (req, input, progress) => runStriped({ ...job, req, progress }, held, input), job.progress, job.signal)
        : await runStriped(job, held, { kind: "store", size: job.req.size! });
      if (striped) {
        settle(job, await striped.commit());
        return;
      }
    } catch (e) {
      if (job.signal?.aborted || job.settled) return;
      await cleanUp(job.req);
      const detail = e instanceof Error ? e.message : String(e);
      settle(job, failedOutcome(`The engine failed unexpectedly while processing ${job.req.filename} (${detail}); the run can be retried.`, detail));
      return;
    }
    if (job.settled) return;
    // Read whole: on a worker held for it if one is left, and the others go back to the pool.
    const slot = held.find((s) => workers.alive(s) && s.pending.size === 0) ?? (workers.canSpawn() ? workers.spawn() : null);
    for (const s of held) if (s !== slot && s.heldFor === job) s.heldFor = null;
    if (!slot) {
      // Every held worker died: wait in line like a new request.
      release(job);
      job.noStripes = true;
      queue.unshift(job);
      dispatch();
      return;
    }
    slot.heldFor = job;
    job.session = [slot];
    dispatch();
    settle(job, await whole(slot, job));
  }

  function dispatch(): void {
    if (queue.length > 0) speculations.yieldToQueue();
    while (queue.length > 0 && !closed) {
      const free = workers.idle();
      const spawnable = workers.spawnable();
      if (free.length === 0 && spawnable === 0) return;
      const job = queue.shift()!;
      const striped =
        queue.length === 0 && free.length + spawnable >= 2 && !job.noStripes &&
        ((mayStripe(job.req) && job.req.size !== undefined && job.req.size >= minSplitBytes) || mayUnpack(job.req, mayStripe, minSplitBytes));
      if (striped) {
        // Nobody else waiting: every worker is held for this file.
        void session(job, holdAll(job, free));
        continue;
      }
      const slot = free[0] ?? workers.spawn();
      slot.heldFor = job;
      job.session = [slot];
      void whole(slot, job).then((outcome) => settle(job, outcome));
    }
  }

  function abort(job: Job): void {
    const queued = queue.indexOf(job);
    if (queued >= 0) queue.splice(queued, 1);
    for (const s of [...(job.session ?? [])]) if (workers.alive(s) && (s.heldFor === job || workers.busyWith(s, job))) workers.retire(s, "aborted");
    for (const s of [...workers.slots]) if (workers.busyWith(s, job)) workers.retire(s, "aborted");
    if (job.settled) return;
    job.settled = true;
    release(job);
    const reason = job.signal?.reason ?? new DOMException("The operation was aborted.", "AbortError");
    void cleanUp(job.req).then(() => job.reject(reason));
    dispatch();
  }

  return {
    speculate: (req, expectedBytes) => speculations.speculate(req, expectedBytes),
    stats: () => ({ workers: workers.slots.length, busy: workers.slots.filter((s) => !idle(s)).length, queued: queue.length }),
    warm() {
      if (closed) return;
      while (workers.canSpawn()) workers.spawn();
    },
    async process(asked, signal, progress) {
      const req = withLimits(asked);
      if (closed) throw new Error("engine pool is closed");
      if (signal?.aborted) throw signal.reason;
      if (speculations.has(req.runId)) {
        const outcome = await speculations.adopt(req, signal, progress);
        if (outcome) return outcome;
        if (closed) throw new Error("engine pool is closed");
        progress?.fill(0);
      }
      return new Promise<ProcessOutcome>((resolve, reject) => {
        const job: Job = { id: workers.id(), req, signal, progress: progress ?? newEngineProgress(), resolve, reject };
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
      speculations.dropAll(err);
      const jobs = new Set<Job>([...queue.splice(0), ...workers.jobs()]);
      for (const slot of [...workers.slots]) workers.retire(slot, "engine pool closed");
      for (const job of jobs) {
        if (job.settled) continue;
        job.settled = true;
        if (job.onAbort) job.signal?.removeEventListener("abort", job.onAbort);
        job.reject(err);
      }
    },
  };
}

export type { GrowingFile, SplitPlan, StripeResult, StripeSource, StripeTask };
