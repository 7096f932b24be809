import { closeSync, openSync } from "node:fs";
import type { GrowingFile, Striped, StripedInput } from "../stripes";
import { mayStripe } from "../stripe-plan";
import { trace } from "../trace";
import { type EngineProgress, newEngineProgress, type ProcessOutcome, type ProcessRequest, type Speculation } from "../types";
import type { Job, Slot, WorkerSlots } from "./slots";

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

/** What speculation needs of the scheduler (src/engine/pool/index.ts). */
export interface SpeculationHost {
  readonly workers: WorkerSlots;
  /** The pool is open and no request waits for a worker. */
  quiet(): boolean;
  withLimits(req: ProcessRequest): ProcessRequest;
  holdAll(job: Job, free: Slot[]): Slot[];
  release(job: Job): void;
  runStriped(job: Job, held: Slot[], input: StripedInput): Promise<Striped | null>;
  dispatch(): void;
}

export interface SpeculationOptions {
  minSplitBytes: number;
  /** Largest arriving file begun on before it is stored. */
  speculateMaxBytes: number;
  /** How long finished work waits for its run's job before it is dropped. */
  adoptWithinMs: number;
}

/**
 * Files read while they arrive: with every worker idle, a large upload is
 * read in stripes as the store writes it, and its run's job, when it comes,
 * adopts the result (or reads the stored file as usual if there is none, or
 * if its pipeline or schema changed meanwhile). A request that waits for the
 * workers ends any read of a file still arriving.
 */
export class Speculations {
  private readonly specs = new Map<string, Spec>();

  constructor(
    private readonly host: SpeculationHost,
    private readonly opts: SpeculationOptions,
  ) {}

  has(runId: string): boolean {
    return this.specs.has(runId);
  }

  /** A file still arriving must not keep the workers from files that are here: its early start is dropped (its run is then read as usual). */
  yieldToQueue(): void {
    for (const spec of this.specs.values()) {
      if (spec.ended || spec.file.size !== null) continue;
      const reason = new Error("another file is waiting for the workers");
      // Failing the file wakes a read waiting for its next bytes; the abort stops one in a stripe.
      spec.file.fail(reason);
      spec.controller.abort(reason);
    }
  }

  dropAll(reason: Error): void {
    for (const spec of [...this.specs.values()]) this.drop(spec, reason);
  }

  /** Drops a speculation's work (its temp files), whenever its read ends. */
  private drop(spec: Spec, reason: Error): void {
    if (this.specs.get(spec.req.runId) === spec) this.specs.delete(spec.req.runId);
    if (spec.expiry) clearTimeout(spec.expiry);
    spec.file.fail(reason);
    spec.controller.abort(reason);
    void spec.result.then((striped) => striped?.discard()).catch(() => {});
  }

  speculate(asked: ProcessRequest, expectedBytes: number): Speculation | null {
    const { host, specs } = this;
    const req = host.withLimits(asked);
    if (!host.quiet() || specs.size > 0 || req.storage.kind !== "local" || !mayStripe(req)) return null;
    if (!(expectedBytes >= this.opts.minSplitBytes && expectedBytes <= this.opts.speculateMaxBytes)) return null;
    const free = host.workers.idle();
    if (free.length + host.workers.spawnable() < 2) return null;
    const controller = new AbortController();
    const job: Job = { id: host.workers.id(), req, signal: controller.signal, progress: newEngineProgress(), resolve() {}, reject() {} };
    host.holdAll(job, free);
    const file = new GrowingUpload();
    const opened = Promise.withResolvers<void>();
    const spec: Spec = { req, job, file, controller, result: Promise.resolve(null), ended: false, expiry: null };
    spec.result = (async () => {
      await opened.promise;
      if (file.failed || controller.signal.aborted) return null;
      trace(`${req.runId}: read while it arrives`);
      return host.runStriped(job, free, { kind: "growing", file });
    })()
      .catch(() => null)
      .then((striped) => {
        spec.ended = true;
        file.close();
        host.release(job);
        trace(`${req.runId}: read while it arrived: ${striped ? "done, waiting for its job" : "gave up"}`);
        // Still unclaimed: it waits for its run's job a while (a job that took it, or a drop, owns it now).
        if (specs.get(req.runId) === spec) {
          if (!striped) specs.delete(req.runId);
          else spec.expiry = setTimeout(() => this.drop(spec, new Error("no job took it")), this.opts.adoptWithinMs);
        }
        host.dispatch();
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
      cancel: (reason) => {
        opened.resolve();
        this.drop(spec, reason);
      },
    };
  }

  /** The work a speculation did for `req`'s run, committed; null when there is none to take (the run is then read as usual). */
  async adopt(req: ProcessRequest, signal?: AbortSignal, progress?: EngineProgress): Promise<ProcessOutcome | null> {
    const spec = this.specs.get(req.runId);
    if (!spec) return null;
    this.specs.delete(req.runId);
    // The caller's counters take over from what the read while arriving counted so far.
    if (progress) {
      progress.set(spec.job.progress);
      spec.job.progress = progress;
    }
    if (spec.expiry) clearTimeout(spec.expiry);
    if (workOf(spec.req) !== workOf(req)) {
      this.drop(spec, new Error("the run's pipeline or schema changed while its file arrived"));
      return null;
    }
    const stop = Promise.withResolvers<null>();
    const onAbort = () => stop.resolve(null);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const striped = await Promise.race([spec.result, stop.promise]);
      if (signal?.aborted) {
        this.drop(spec, signal.reason instanceof Error ? signal.reason : new Error("aborted"));
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
}
