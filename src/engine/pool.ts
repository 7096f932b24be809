import { closeSync, openSync } from "node:fs";
import { storeCache } from "../adapters/storage/index";
import type { StorageConfig } from "../adapters/storage/port";
import type { SplitPlan, StripeResult, StripeSource, StripeTask } from "./stripe-plan";
import { type GrowingFile, processStriped, type Striped, type StripedInput, type StripeWorkers } from "./stripes";
import { trace } from "./trace";
import { mayUnpack, stripeUnpacked } from "./unpack";
import {
  DEFAULT_MIN_SPLIT_BYTES,
  type EngineProgress,
  type EnginePool,
  newEngineProgress,
  type ParseLimits,
  type ProcessOutcome,
  type ProcessRequest,
  PROGRESS_BYTES,
  PROGRESS_ROWS,
  type Speculation,
} from "./types";
import type { WorkerReply, WorkerRequest } from "./worker";

export interface EnginePoolOptions {
  /** Most worker threads at once. */
  size: number;
  /** The worker script (tests substitute one that misbehaves); default src/engine/worker.ts. */
  workerUrl?: string | URL;
  /**
   * Originals at least this large may be read by several idle workers at once
   * (src/engine/stripes.ts; default 8 MiB). Tests lower it to split small files.
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
 * An arriving file's bytes as the store writes them (EnginePool.speculate):
 * the descriptor is opened on the store's temp file, and stays valid when
 * the finished file is renamed into place.
 */
class GrowingUpload implements GrowingFile {
  fd = -1;
  available = 0;
  size: number | null = null;
  failed: Error | null = null;
  private waiters: (() => void)[] = [];

  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  open(path: string): void {
    try {
      this.fd = openSync(path, "r");
    } catch (e) {
      this.fail(e instanceof Error ? e : new Error(String(e)));
    }
  }

  grow(total: number): void {
    this.available = total;
    this.wake();
  }

  complete(size: number): void {
    this.size = size;
    this.available = size;
    this.wake();
  }

  fail(reason: Error): void {
    this.failed ??= reason;
    this.wake();
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** Work begun on an arriving file, waiting for its run's job. */
interface Spec {
  req: ProcessRequest;
  job: Job;
  file: GrowingUpload;
  controller: AbortController;
  /** Settles when the striped read ends: its result, or null when it gave up or was stopped. */
  result: Promise<Striped | null>;
  ended: boolean;
  expiry: ReturnType<typeof setTimeout> | null;
}

/** What makes two requests the same work (the size is not known while a file arrives). */
const workOf = (r: ProcessRequest) =>
  JSON.stringify([r.runId, r.filename, r.originalKey, r.processedKey, r.rejectsKey, r.outputFormat, r.mappings, r.schema.id, r.schema.version, r.storage]);

/**
 * Bytes per stripe. Smaller stripes balance the workers better and bound the
 * output held in memory (a 2 MiB CSV stripe renders to ~4.5 MiB of JSON);
 * each costs a message and a header re-read (docs/decisions/engine.md).
 */
const DEFAULT_STRIPE_BYTES = 2 * 1024 * 1024;

interface Job {
  id: number;
  req: ProcessRequest;
  /** Rows and bytes read so far: striped reads add each stripe's as it comes back, a whole read's worker writes them. */
  progress: EngineProgress;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** The slots a striped read of this job's file holds. */
  session?: Slot[];
  /** Read whole: a striped read of it gave up and every worker it held died. */
  noStripes?: boolean;
  settled?: boolean;
  resolve(outcome: ProcessOutcome): void;
  reject(err: unknown): void;
}

/** A message sent to a worker whose reply someone awaits. */
interface Pending {
  id: number;
  job: Job | null;
  resolve(reply: WorkerReply): void;
  reject(err: Error): void;
}

interface Slot {
  // Bun's own Worker type carries ref/unref (the global one may be the DOM's).
  worker: Bun.Worker;
  /** Messages sent whose replies are awaited, by id (a worker handles its messages one after another, in order). */
  pending: Map<number, Pending>;
  /** The job whose striped read holds this worker (between its tasks too). */
  heldFor: Job | null;
}

const idle = (s: Slot) => s.pending.size === 0 && s.heldFor === null;
/** Stripes outstanding per worker: the next one waits in the worker while it does the current one, so it never waits for the main thread. */
const STRIPES_PER_WORKER = 2;

const DEFAULT_WORKER = new URL("./worker.ts", import.meta.url);

function failedOutcome(errorMessage: string, internalError?: string): ProcessOutcome {
  return {
    ok: false,
    errorMessage,
    internalError,
    failure: "internal",
    counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 },
    errors: [],
    processed: null,
    rejects: null,
    processMs: 0,
  };
}

export interface EnginePoolStats {
  /** Worker threads alive. */
  workers: number;
  busy: number;
  queued: number;
}

/** Names the engine reads only whole (workbooks, JSON and XML documents, gzip). */
const WHOLE_ONLY = /\.(xlsx|xls|json|xml|gz|gzip|zip|pgp|gpg|asc)$/i;

/** Whether a file may be striped, by its request alone (the first bytes decide the rest, in split.ts). */
function mayStripe(req: ProcessRequest): boolean {
  const o = req.mappings.options;
  if (req.outputFormat !== "json" || o.headerRow === false || o.skipEmptyLines === false) return false;
  if (o.format !== undefined) return o.format === "csv" || o.format === "tsv" || o.format === "ndjson";
  return !WHOLE_ONLY.test(req.filename);
}

/**
 * Bun Worker threads that run the engine, so parsing never blocks the HTTP
 * server. Workers start on first use (the admin CLI creates a pool and never
 * starts one), up to `size`. A file that may be striped (of known size, at
 * least `minSplitBytes`) with nobody else waiting takes every worker: one
 * plans the split while the others compile the schema's validator, then
 * stripes go to whichever is free (src/engine/stripes.ts, coordinated on this
 * thread); anything else, and a striped read that gives up, is read whole by
 * one worker. Further requests wait in order. A worker that dies or whose
 * request is aborted is terminated and a fresh one is started for the next
 * request.
 */
export function createEnginePool(opts: EnginePoolOptions): EnginePool & { stats(): EnginePoolStats; warm(): void } {
  const size = Math.max(1, opts.size);
  const workerUrl = opts.workerUrl ?? DEFAULT_WORKER;
  const minSplitBytes = opts.minSplitBytes ?? DEFAULT_MIN_SPLIT_BYTES;
  const stripeBytes = opts.stripeBytes ?? DEFAULT_STRIPE_BYTES;
  const adoptWithinMs = opts.adoptWithinMs ?? 60_000;
  const speculateMaxBytes = opts.speculateMaxBytes ?? 256 * 1024 * 1024;
  const specs = new Map<string, Spec>();
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 1;
  let closed = false;
  const canSpawn = () => slots.length < size;
  const storeFor = storeCache();
  const withLimits = (req: ProcessRequest): ProcessRequest => (opts.limits ? { ...req, limits: { ...opts.limits, ...req.limits } } : req);

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

  function retire(slot: Slot, why: string): void {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    slot.worker.terminate();
    const pending = [...slot.pending.values()];
    slot.pending.clear();
    slot.heldFor = null;
    for (const p of pending) p.reject(new Error(why));
  }

  function crashed(slot: Slot, detail: string): void {
    if (!slots.includes(slot)) return;
    retire(slot, detail);
    dispatch();
  }

  function spawn(): Slot {
    const worker = new Worker(workerUrl) as unknown as Bun.Worker;
    // Only a worker with something to do keeps the process alive (ref'd while it has a task).
    worker.unref();
    const slot: Slot = { worker, pending: new Map(), heldFor: null };
    worker.addEventListener("message", (event) => {
      const reply = (event as MessageEvent<WorkerReply>).data;
      const p = slot.pending.get(reply.id);
      if (!p) return;
      slot.pending.delete(reply.id);
      if (!slot.heldFor && slot.pending.size === 0) worker.unref();
      p.resolve(reply);
      dispatch();
    });
    worker.addEventListener("error", (event) => crashed(slot, (event as ErrorEvent).message || "uncaught error in the worker"));
    worker.addEventListener("close", (event) => crashed(slot, `worker exited with code ${(event as CloseEvent).code ?? "unknown"}`));
    slots.push(slot);
    return slot;
  }

  /** Sends `msg` to an idle (or held) slot and waits for its reply; rejects if the worker dies first. */
  function ask(slot: Slot, job: Job | null, msg: WorkerRequest & { id: number }, transfer: ArrayBuffer[] = []): Promise<WorkerReply> {
    return new Promise<WorkerReply>((resolve, reject) => {
      slot.pending.set(msg.id, { id: msg.id, job, resolve, reject });
      slot.worker.ref();
      slot.worker.postMessage(msg, { transfer });
    });
  }

  /** The whole file on one worker. */
  async function whole(slot: Slot, job: Job): Promise<ProcessOutcome> {
    try {
      // A striped read that gave up counted rows this read counts again.
      job.progress.fill(0);
      const reply = await ask(slot, job, { type: "process", id: nextId++, req: job.req, progress: job.progress });
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
      for (const s of held) if (slots.includes(s) && s.pending.size < depth && (!best || s.pending.size < best.pending.size)) best = s;
      return best;
    };
    return {
      width: held.length * STRIPES_PER_WORKER,
      async plan(req, source, headBytes) {
        const slot = free(1);
        if (!slot) return null;
        const reply = await ask(slot, job, { type: "plan", id: nextId++, req, source, headBytes });
        return "plan" in reply ? reply.plan : null;
      },
      hasIdle: () => free(1) !== undefined,
      async stripe(req, task, spare, idleOnly) {
        const slot = free(idleOnly ? 1 : STRIPES_PER_WORKER);
        if (!slot) throw new Error("no worker left for the stripe");
        const reply = await ask(slot, job, { type: "stripe", id: nextId++, req, task, spare }, spare);
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
    while (canSpawn()) free.push(spawn());
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
    const slot = held.find((s) => slots.includes(s) && s.pending.size === 0) ?? (canSpawn() ? spawn() : null);
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
    // A file still arriving must not keep the workers from files that are here: its early start is dropped (its run is then read as usual).
    if (queue.length > 0) {
      for (const spec of specs.values()) {
        if (spec.ended || spec.file.size !== null) continue;
        const reason = new Error("another file is waiting for the workers");
        // Failing the file wakes a read waiting for its next bytes; the abort stops one in a stripe.
        spec.file.fail(reason);
        spec.controller.abort(reason);
      }
    }
    while (queue.length > 0 && !closed) {
      const free = slots.filter(idle);
      const spawnable = size - slots.length;
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
      const slot = free[0] ?? spawn();
      slot.heldFor = job;
      job.session = [slot];
      void whole(slot, job).then((outcome) => settle(job, outcome));
    }
  }

  function abort(job: Job): void {
    const queued = queue.indexOf(job);
    if (queued >= 0) queue.splice(queued, 1);
    const busyWith = (s: Slot) => [...s.pending.values()].some((p) => p.job === job);
    for (const s of [...(job.session ?? [])]) if (slots.includes(s) && (s.heldFor === job || busyWith(s))) retire(s, "aborted");
    for (const s of [...slots]) if (busyWith(s)) retire(s, "aborted");
    if (job.settled) return;
    job.settled = true;
    release(job);
    const reason = job.signal?.reason ?? new DOMException("The operation was aborted.", "AbortError");
    void cleanUp(job.req).then(() => job.reject(reason));
    dispatch();
  }

  /** Drops a speculation's work (its temp files), whenever its read ends. */
  function drop(spec: Spec, reason: Error): void {
    if (specs.get(spec.req.runId) === spec) specs.delete(spec.req.runId);
    if (spec.expiry) clearTimeout(spec.expiry);
    spec.file.fail(reason);
    spec.controller.abort(reason);
    void spec.result.then((striped) => striped?.discard()).catch(() => {});
  }

  function speculate(asked: ProcessRequest, expectedBytes: number): Speculation | null {
    const req = withLimits(asked);
    if (closed || queue.length > 0 || specs.size > 0 || req.storage.kind !== "local" || !mayStripe(req)) return null;
    if (!(expectedBytes >= minSplitBytes && expectedBytes <= speculateMaxBytes)) return null;
    const free = slots.filter(idle);
    if (free.length + (size - slots.length) < 2) return null;
    const controller = new AbortController();
    const job: Job = { id: nextId++, req, signal: controller.signal, progress: newEngineProgress(), resolve() {}, reject() {} };
    holdAll(job, free);
    const file = new GrowingUpload();
    const opened = Promise.withResolvers<void>();
    const spec: Spec = { req, job, file, controller, result: Promise.resolve(null), ended: false, expiry: null };
    spec.result = (async () => {
      await opened.promise;
      if (file.failed || controller.signal.aborted) return null;
      trace(`${req.runId}: read while it arrives`);
      return runStriped(job, free, { kind: "growing", file });
    })()
      .catch(() => null)
      .then((striped) => {
        spec.ended = true;
        file.close();
        release(job);
        trace(`${req.runId}: read while it arrived: ${striped ? "done, waiting for its job" : "gave up"}`);
        // Still unclaimed: it waits for its run's job a while (a job that took it, or a drop, owns it now).
        if (specs.get(req.runId) === spec) {
          if (!striped) specs.delete(req.runId);
          else spec.expiry = setTimeout(() => drop(spec, new Error("no job took it")), adoptWithinMs);
        }
        dispatch();
        return striped;
      });
    specs.set(req.runId, spec);
    return {
      observe: {
        opened(path) {
          file.open(path);
          opened.resolve();
        },
        wrote: (total) => file.grow(total),
        done: (bytes) => file.complete(bytes),
      },
      cancel(reason) {
        opened.resolve();
        drop(spec, reason);
      },
    };
  }

  /** The work a speculation did for `req`'s run, committed; null when there is none to take (the run is then read as usual). */
  async function adopt(spec: Spec, req: ProcessRequest, signal?: AbortSignal, progress?: EngineProgress): Promise<ProcessOutcome | null> {
    specs.delete(req.runId);
    // The caller's counters take over from what the read while arriving counted so far.
    if (progress) {
      progress.set(spec.job.progress);
      spec.job.progress = progress;
    }
    if (spec.expiry) clearTimeout(spec.expiry);
    if (workOf(spec.req) !== workOf(req)) {
      drop(spec, new Error("the run's pipeline or schema changed while its file arrived"));
      return null;
    }
    const stop = Promise.withResolvers<null>();
    const onAbort = () => stop.resolve(null);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const striped = await Promise.race([spec.result, stop.promise]);
      if (signal?.aborted) {
        drop(spec, signal.reason instanceof Error ? signal.reason : new Error("aborted"));
        throw signal.reason;
      }
      if (!striped) return null;
      const outcome = await striped.commit();
      outcome.streamed = true;
      return outcome;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  return {
    speculate,
    stats: () => ({ workers: slots.length, busy: slots.filter((s) => !idle(s)).length, queued: queue.length }),
    warm() {
      if (closed) return;
      while (canSpawn()) spawn();
    },
    async process(asked, signal, progress) {
      const req = withLimits(asked);
      if (closed) throw new Error("engine pool is closed");
      if (signal?.aborted) throw signal.reason;
      const spec = specs.get(req.runId);
      if (spec) {
        const outcome = await adopt(spec, req, signal, progress);
        if (outcome) return outcome;
        if (closed) throw new Error("engine pool is closed");
        progress?.fill(0);
      }
      return new Promise<ProcessOutcome>((resolve, reject) => {
        const job: Job = { id: nextId++, req, signal, progress: progress ?? newEngineProgress(), resolve, reject };
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
      for (const spec of [...specs.values()]) drop(spec, err);
      const jobs = new Set<Job>(queue.splice(0));
      for (const slot of slots) {
        if (slot.heldFor) jobs.add(slot.heldFor);
        for (const p of slot.pending.values()) if (p.job) jobs.add(p.job);
      }
      for (const slot of [...slots]) retire(slot, "engine pool closed");
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
