import type { ObjectStore } from "../../adapters/storage/port";
import type { SplitPlan, StripeResult, StripeSource, StripeTask } from "../stripe-plan";
import type { ProcessOutcome, ProcessRequest } from "../types";
import { OrderedOutput } from "./output";
import { GiveUp, type Range, StripeRanges } from "./ranges";

export { renumberRejects } from "./output";

/**
 * One file on several worker threads, coordinated from the service's main
 * thread (docs/decisions/engine.md, "One file on both workers").
 *
 * A worker plans the split from the file's first bytes (split.ts). The file
 * is then cut into stripes of about `stripeBytes`, each ending at the first
 * line end after its nominal end, and the stripes are handed to the workers
 * one at a time as they become free, so both finish within a stripe of each
 * other. A worker renders a stripe into buffers that are transferred here;
 * they are written to the processed file in stripe order (no temp file, no
 * copy), and the rejects are renumbered over the whole file. A cut is only
 * guessed; it is proven when the stripe before it parses to its end without
 * an open quote (stripe 0 starts after the header, a proven boundary). Any
 * stripe that is not a clean success (a quote left open, an invalid row under
 * `fail`, a budget exceeded, a worker that died), and a budget exceeded over
 * the whole file, makes the coordinator give up (null): the caller then reads
 * the whole file on one worker, so failed runs get exactly the one-worker
 * outcome and message, and successful runs the same bytes, counts and errors.
 *
 * The bytes may still be arriving (an upload being stored, `GrowingFile`):
 * a stripe is handed out once its bytes and its end's line are there.
 *
 * Here the coordinator (which stripe goes out when, and what a result
 * means); ./ranges.ts the input (windows of the file, the cuts), and
 * ./output.ts the ordered output.
 */

/** The workers a striped run may use; the pool sends these to its threads, tests call split.ts directly. */
export interface StripeWorkers {
  /** Stripes processed at once. */
  readonly width: number;
  plan(req: ProcessRequest, source: StripeSource, headBytes: number): Promise<SplitPlan | null>;
  /** `idleOnly`: only to a worker with nothing outstanding (the file's last stripes); `hasIdle` says whether there is one. */
  stripe(req: ProcessRequest, task: StripeTask, spare: ArrayBuffer[], idleOnly?: boolean): Promise<StripeResult>;
  /** Whether a worker has nothing outstanding; absent: the workers take every stripe at once (tests). */
  hasIdle?(): boolean;
}

/** A file being written by this process (an upload arriving), read while it grows. */
export interface GrowingFile {
  /** An open descriptor for reading; valid across a rename of the file. */
  readonly fd: number;
  /** Bytes written so far. */
  readonly available: number;
  /** The final size once the file is complete; null while it grows. */
  readonly size: number | null;
  /** Set when the writer gave up: the bytes will never be complete. */
  readonly failed: Error | null;
  /** Resolves at the next change (growth, completion or failure). */
  changed(): Promise<void>;
}

export type StripedInput = { kind: "store"; size: number } | { kind: "growing"; file: GrowingFile };

export interface StripedOptions {
  stripeBytes: number;
  /** Stripes rendered or being rendered beyond the last one written, at most: bounds the output held in memory. */
  window?: number;
  signal?: AbortSignal;
}

/** A striped run read and written to its end; nothing is at the output keys until `commit`. */
export interface Striped {
  /** Puts the processed (and rejects) file in place and answers the run's outcome. */
  commit(): Promise<ProcessOutcome>;
  /** Drops what was written. */
  discard(): Promise<void>;
}

/**
 * Output buffers (512 KiB each) go back and forth: a worker fills them with
 * a stripe's rows (a 2 MiB CSV stripe renders to about 4.5 MiB of JSON),
 * they are written here and sent back with a later stripe. Each stripe takes
 * SPARE_PER_TASK; this side keeps up to that many per stripe the window
 * allows, so that it never drops one: a buffer dropped on this thread is
 * garbage here, where collections are rare, and the service's memory grew by
 * ~100 MiB on a 1 GB file when the two sides did not balance.
 */
const SPARE_PER_TASK = 10;

/** Stripes merged because a cut fell inside a quoted field, at most per file; more, and the file goes to one worker. */
const MAX_MERGES = 32;

/**
 * Reads `req`'s original in stripes on `workers`. Answers null when the file
 * must be read by one worker instead (not splittable, or any stripe not a
 * clean success); by then nothing is left at the output keys and no stripe
 * is still being processed. Throws only when `signal` aborts.
 */
export async function processStriped(
  req: ProcessRequest,
  store: ObjectStore,
  input: StripedInput,
  workers: StripeWorkers,
  opts: StripedOptions,
): Promise<Striped | null> {
  const run = new StripedRun(req, store, input, workers, opts);
  return run.run();
}

class StripedRun {
  private readonly started = performance.now();
  private readonly window: number;
  private readonly ranges: StripeRanges;
  private readonly output: OrderedOutput;
  private tasks = 0;
  private inFlight = 0;
  private merges = 0;
  private readonly spare: ArrayBuffer[] = [];
  private failure: string | null = null;
  private pumping = false;
  private kicked = false;
  private writing: Promise<void> = Promise.resolve();
  private flushing = false;
  private readonly settled = Promise.withResolvers<void>();

  constructor(
    private readonly req: ProcessRequest,
    store: ObjectStore,
    input: StripedInput,
    private readonly workers: StripeWorkers,
    private readonly opts: StripedOptions,
  ) {
    this.window = Math.max(1, opts.window ?? workers.width);
    this.ranges = new StripeRanges(req, store, input, {
      stripeBytes: opts.stripeBytes,
      // One full stripe per worker: the pool gives each worker two stripes at once (`width`).
      tailBytes: (workers.width / 2) * opts.stripeBytes,
      signal: opts.signal,
      stopped: () => this.failure,
    });
    this.output = new OrderedOutput(req, store);
  }

  async run(): Promise<Striped | null> {
    try {
      const headBytes = await this.ranges.head();
      const plan = await this.workers.plan(this.req, this.ranges.source, headBytes);
      if (!plan || !this.ranges.begin(plan)) return null;
      await this.output.open();
      void this.pump();
      await this.settled.promise;
      if (this.opts.signal?.aborted) throw this.opts.signal.reason;
      if (this.failure !== null) {
        await this.output.drop();
        return null;
      }
      return this.output.finish(plan.format, this.started);
    } catch (e) {
      await this.output.drop();
      if (this.opts.signal?.aborted) throw this.opts.signal.reason;
      if (e instanceof GiveUp) return null;
      throw e;
    }
  }

  /** Hands out the first waiting ranges while workers are free and the window allows; one pass at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.kicked = true;
      return;
    }
    this.pumping = true;
    const ranges = this.ranges.list;
    try {
      do {
        this.kicked = false;
        while (this.failure === null && this.inFlight < this.workers.width) {
          const i = ranges.findIndex((r) => r.state === "waiting");
          if (i < 0 || i >= this.window) break;
          const r = ranges[i]!;
          if (r.end === null) {
            await this.ranges.extend();
            continue;
          }
          const tail = this.ranges.inTail(r.start) && this.workers.hasIdle !== undefined;
          // A result arriving kicks the pump again. With nothing in flight none will: the stripe goes out
          // and, if no worker is left at all, fails, and the file is given up as before.
          if (tail && this.inFlight > 0 && !this.workers.hasIdle!()) break;
          this.dispatch(r, tail);
        }
      } while (this.kicked && this.failure === null);
    } catch (e) {
      this.fail(e instanceof Error ? e.message : String(e));
    } finally {
      this.pumping = false;
      this.check();
    }
  }

  private dispatch(r: Range, idleOnly: boolean): void {
    r.state = "running";
    this.inFlight++;
    const task: StripeTask = { index: this.tasks++, start: r.start, end: r.end!, plan: this.ranges.plan, source: this.ranges.source };
    const spare = this.spare.splice(0, SPARE_PER_TASK);
    this.workers.stripe(this.req, task, spare, idleOnly).then(
      (res) => this.onResult(r, res),
      (e) => this.onResult(r, { index: task.index, ok: false, counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], rejects: "", buffers: [], lengths: [], size: 0, detail: String(e) }),
    );
  }

  private onResult(r: Range, res: StripeResult): void {
    this.inFlight--;
    if (this.opts.signal?.aborted) this.fail("aborted");
    if (this.ranges.list.includes(r) && this.failure === null) {
      r.state = "done";
      r.result = res;
      this.flush();
    } else this.recycle(res.buffers);
    void this.pump();
    this.check();
  }

  private recycle(buffers: ArrayBuffer[]): void {
    for (const b of buffers) if (this.spare.length < this.window * SPARE_PER_TASK) this.spare.push(b);
  }

  private fail(reason: string): void {
    this.failure ??= reason;
  }

  /**
   * Judges the ranges in file order, from a proven boundary: a clean
   * stripe is written and proves the next boundary; one whose end is inside
   * an open quote was cut inside a quoted field, so it is merged with the
   * next range and read again; anything else gives up.
   */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    const ranges = this.ranges.list;
    this.writing = this.writing
      .then(async () => {
        while (this.failure === null && ranges[0]?.state === "done") {
          const r = ranges[0];
          const res = r.result!;
          if (res.ok) {
            const overBudget = await this.output.write(res, (b) => this.recycle(b));
            if (overBudget !== null) this.fail(overBudget);
            ranges.shift();
            void this.pump();
            continue;
          }
          if (!res.openAtEnd || r.last || ++this.merges > MAX_MERGES) {
            this.fail(`${res.detail ?? "stopped"} (bytes ${r.start}-${r.end})`);
            return;
          }
          if (ranges[1]?.end === null) await this.ranges.extend();
          const next = ranges[1]!;
          ranges.splice(0, 2, { start: r.start, end: next.end, last: next.last, state: "waiting" });
          if (next.result) this.recycle(next.result.buffers);
          void this.pump();
        }
      })
      .catch((e) => this.fail(`writing: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        this.flushing = false;
        // Results that arrived while this pass ran.
        if (this.failure === null && ranges[0]?.state === "done") this.flush();
        this.check();
      });
  }

  /** Settles once every range is written, or once a failure left nothing in flight. */
  private check(): void {
    if (this.pumping || this.flushing || this.inFlight > 0) return;
    if (this.failure !== null || (this.ranges.ended && this.ranges.list.length === 0)) void this.writing.then(() => this.settled.resolve());
  }
}
