import { read } from "node:fs";
import type { ObjectStore } from "../adapters/storage/port";
import type { RowError, RunCounts } from "../domain/runs";
import { cutIn, HEAD_BYTES, type SplitPlan, type StripeResult, type StripeSource, type StripeTask } from "./stripe-plan";
import type { ProcessOutcome, ProcessRequest } from "./types";
import { openMainThreadSink, type Sink } from "./write/sink";

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

/** Row errors kept in the outcome (as processFile keeps). */
const MAX_REPORTED_ERRORS = 20;
/** How far past a stripe's nominal end a line end is looked for; a longer line makes the file go to one worker. */
const CUT_WINDOW = 1024 * 1024;
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

const REJECT_PREFIX = '{"inputRow":';

/** A stripe's rejects (lines `{"inputRow":n,...}` joined by `,\n`) with each inputRow moved by `offset`. */
export function renumberRejects(text: string, offset: number): string {
  if (offset === 0) return text;
  return text
    .split("\n")
    .map((line) => {
      if (!line.startsWith(REJECT_PREFIX)) throw new Error("a stripe's rejects are not in the expected layout");
      let i = REJECT_PREFIX.length;
      while (i < line.length && line.charCodeAt(i) >= 48 && line.charCodeAt(i) <= 57) i++;
      return `${REJECT_PREFIX}${Number(line.slice(REJECT_PREFIX.length, i)) + offset}${line.slice(i)}`;
    })
    .join("\n");
}

class GiveUp extends Error {}

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

/** A byte range of the file; ranges[0] of a run always starts at a proven record boundary. */
interface Range {
  start: number;
  /** null until the next cut (or the file's end) is found. */
  end: number | null;
  /** Ends at the file's end. */
  last: boolean;
  state: "waiting" | "running" | "done";
  result?: StripeResult;
}

/** Stripes at a file's end are smaller, but not smaller than this: the smaller a stripe, the likelier a cut inside a quoted field. */
const MIN_SMALL_STRIPE = 64 * 1024;

/** Stripes merged because a cut fell inside a quoted field, at most per file; more, and the file goes to one worker. */
const MAX_MERGES = 32;

class StripedRun {
  private readonly started = performance.now();
  private readonly source: StripeSource;
  private readonly window: number;
  private plan!: SplitPlan;
  /** The ranges not yet written, in file order. */
  private ranges: Range[] = [];
  private ended = false;
  private tasks = 0;
  private inFlight = 0;
  private merges = 0;
  private readonly spare: ArrayBuffer[] = [];
  private failure: string | null = null;
  private pumping = false;
  private kicked = false;
  private extending: Promise<void> | null = null;
  private writing: Promise<void> = Promise.resolve();
  private flushing = false;
  private readonly settled = Promise.withResolvers<void>();

  private processed: Sink | null = null;
  private rejects: Sink | null = null;
  private rowsWritten = false;
  private processedSize = 0;
  private rejectsSize = 0;
  private readonly counts: RunCounts = { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 };
  private readonly errors: RowError[] = [];
  private inputInfo: StripeResult["input"];

  constructor(
    private readonly req: ProcessRequest,
    private readonly store: ObjectStore,
    private readonly input: StripedInput,
    private readonly workers: StripeWorkers,
    private readonly opts: StripedOptions,
  ) {
    this.source = input.kind === "store" ? { kind: "store" } : { kind: "fd", fd: input.file.fd };
    this.window = Math.max(1, opts.window ?? workers.width);
  }

  async run(): Promise<Striped | null> {
    try {
      const headBytes = await this.bytesUpTo(HEAD_BYTES);
      const plan = await this.workers.plan(this.req, this.source, headBytes);
      if (!plan) return null;
      this.plan = plan;
      const size = this.size();
      if (size !== null && plan.prefixEnd >= size) return null;
      this.ranges.push({ start: plan.prefixEnd, end: null, last: false, state: "waiting" });
      this.processed = openMainThreadSink(this.store, this.req.processedKey, "application/json");
      await this.processed.write("[\n");
      this.processedSize = 2;
      void this.pump();
      await this.settled.promise;
      if (this.opts.signal?.aborted) throw this.opts.signal.reason;
      if (this.failure !== null) {
        await this.drop();
        return null;
      }
      return this.finished();
    } catch (e) {
      await this.drop();
      if (this.opts.signal?.aborted) throw this.opts.signal.reason;
      if (e instanceof GiveUp) return null;
      throw e;
    }
  }

  private size(): number | null {
    return this.input.kind === "store" ? this.input.size : this.input.file.size;
  }

  /** Waits until `n` bytes are there (or the file is complete with fewer); answers how many there are to read, at most n. */
  private async bytesUpTo(n: number): Promise<number> {
    if (this.input.kind === "store") return Math.min(n, this.input.size);
    const file = this.input.file;
    for (;;) {
      if (this.opts.signal?.aborted) throw this.opts.signal.reason;
      if (this.failure !== null) throw new GiveUp(this.failure);
      if (file.failed) throw new GiveUp(`the upload failed: ${file.failed.message}`);
      if (file.size !== null) return Math.min(n, file.size);
      if (file.available >= n) return n;
      await file.changed();
    }
  }

  private async readWindow(start: number, end: number): Promise<Uint8Array> {
    if (this.source.kind === "fd") {
      const buf = new Uint8Array(end - start);
      const fd = this.source.fd;
      let got = 0;
      while (got < buf.byteLength) {
        const n = await new Promise<number>((resolve, reject) => read(fd, buf, got, buf.byteLength - got, start + got, (err, bytes) => (err ? reject(err) : resolve(bytes))));
        if (n === 0) break;
        got += n;
      }
      return buf.subarray(0, got);
    }
    const body = await this.store.get(this.req.originalKey, { range: { start, end: end - 1 } });
    if (!body) throw new GiveUp(`the original ${this.req.originalKey} is missing`);
    return new Uint8Array(await new Response(body).arrayBuffer());
  }

  /** Finds the end of the open (last) range: a cut about `stripeBytes` on, or the file's end. One search at a time. */
  private extend(): Promise<void> {
    this.extending ??= this.findEnd().finally(() => (this.extending = null));
    return this.extending;
  }

  /**
   * The file's last `tailBytes` (as many full stripes as there are workers):
   * stripes there are a quarter of the size and go only to a worker with
   * nothing outstanding. Elsewhere each worker holds two stripes, so that it
   * never waits for this thread between them; at the end that let the last
   * stripe queue behind a slower worker's while the other sat idle for up to
   * a stripe (12-48 ms of a 1 s run on the bench file). Only once the size is
   * known (a file still arriving has none yet).
   */
  private inTail(start: number): boolean {
    const size = this.size();
    return size !== null && size - start <= this.tailBytes;
  }

  /** One full stripe per worker: the pool gives each worker two stripes at once (`width`). */
  private get tailBytes(): number {
    return (this.workers.width / 2) * this.opts.stripeBytes;
  }

  /** How far on from `start` the next cut is looked for: `stripeBytes`, less in the tail (above), never below MIN_SMALL_STRIPE (or stripeBytes, if smaller). */
  private nominalBytes(start: number): number {
    const full = this.opts.stripeBytes;
    const floor = Math.min(full, MIN_SMALL_STRIPE);
    return this.inTail(start) ? Math.max(Math.floor(full / 4), floor) : full;
  }

  private async findEnd(): Promise<void> {
    const open = this.ranges[this.ranges.length - 1];
    if (!open || open.end !== null) return;
    const quote = this.plan.format === "ndjson" ? null : (this.req.mappings.options.quote ?? '"').charCodeAt(0);
    let from = open.start + this.nominalBytes(open.start);
    const limit = from + CUT_WINDOW;
    while (from < limit) {
      const upTo = await this.bytesUpTo(from + HEAD_BYTES);
      const size = this.size();
      if (size !== null && from >= size) return this.endsFile(open, size);
      const rel = cutIn(await this.readWindow(from, upTo), this.plan.newline, quote);
      if (rel >= 0) {
        const cut = from + rel;
        if (size !== null && cut >= size) return this.endsFile(open, size);
        open.end = cut;
        this.ranges.push({ start: cut, end: null, last: false, state: "waiting" });
        return;
      }
      if (size !== null && upTo >= size) return this.endsFile(open, size);
      from = upTo;
    }
    throw new GiveUp(`no line end within ${CUT_WINDOW} bytes after byte ${open.start + this.opts.stripeBytes}`);
  }

  private endsFile(open: Range, size: number): void {
    open.end = size;
    open.last = true;
    this.ended = true;
  }

  /** Hands out the first waiting ranges while workers are free and the window allows; one pass at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.kicked = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.kicked = false;
        while (this.failure === null && this.inFlight < this.workers.width) {
          const i = this.ranges.findIndex((r) => r.state === "waiting");
          if (i < 0 || i >= this.window) break;
          const r = this.ranges[i]!;
          if (r.end === null) {
            await this.extend();
            continue;
          }
          const tail = this.inTail(r.start) && this.workers.hasIdle !== undefined;
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
    const task: StripeTask = { index: this.tasks++, start: r.start, end: r.end!, plan: this.plan, source: this.source };
    const spare = this.spare.splice(0, SPARE_PER_TASK);
    this.workers.stripe(this.req, task, spare, idleOnly).then(
      (res) => this.onResult(r, res),
      (e) => this.onResult(r, { index: task.index, ok: false, counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], rejects: "", buffers: [], lengths: [], size: 0, detail: String(e) }),
    );
  }

  private onResult(r: Range, res: StripeResult): void {
    this.inFlight--;
    if (this.opts.signal?.aborted) this.fail("aborted");
    if (this.ranges.includes(r) && this.failure === null) {
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
    this.writing = this.writing
      .then(async () => {
        while (this.failure === null && this.ranges[0]?.state === "done") {
          const r = this.ranges[0];
          const res = r.result!;
          if (res.ok) {
            await this.writeStripe(res);
            this.ranges.shift();
            void this.pump();
            continue;
          }
          if (!res.openAtEnd || r.last || ++this.merges > MAX_MERGES) {
            this.fail(`${res.detail ?? "stopped"} (bytes ${r.start}-${r.end})`);
            return;
          }
          if (this.ranges[1]?.end === null) await this.extend();
          const next = this.ranges[1]!;
          this.ranges.splice(0, 2, { start: r.start, end: next.end, last: next.last, state: "waiting" });
          if (next.result) this.recycle(next.result.buffers);
          void this.pump();
        }
      })
      .catch((e) => this.fail(`writing: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        this.flushing = false;
        // Results that arrived while this pass ran.
        if (this.failure === null && this.ranges[0]?.state === "done") this.flush();
        this.check();
      });
  }

  private async writeStripe(r: StripeResult): Promise<void> {
    const offset = this.counts.total;
    const processed = this.processed!;
    if (r.size > 0) {
      if (this.rowsWritten) {
        await processed.write(",\n");
        this.processedSize += 2;
      }
      for (let i = 0; i < r.buffers.length; i++) {
        const buf = r.buffers[i]!;
        await processed.writeForeign(new Uint8Array(buf, 0, r.lengths[i]!));
        if (processed.copies) this.recycle([buf]);
      }
      this.processedSize += r.size;
      this.rowsWritten = true;
    }
    for (const e of r.errors) {
      if (this.errors.length >= MAX_REPORTED_ERRORS) break;
      this.errors.push({ ...e, inputRow: e.inputRow + offset });
    }
    if (r.rejects) {
      const first = this.rejects === null;
      this.rejects ??= openMainThreadSink(this.store, this.req.rejectsKey, "application/json");
      const text = `${first ? "[\n" : ",\n"}${renumberRejects(r.rejects, offset)}`;
      await this.rejects.write(text);
      this.rejectsSize += Buffer.byteLength(text);
    }
    this.inputInfo ??= r.input;
    const c = this.counts;
    c.total += r.counts.total;
    c.valid += r.counts.valid;
    c.invalid += r.counts.invalid;
    c.skipped += r.counts.skipped;
    c.quarantined += r.counts.quarantined;
    // Budgets over the file so far: give up at once, one worker then fails the run with its own message.
    const v = this.req.mappings.validations;
    if ((v.onInvalidRow ?? "fail") === "fail" && c.invalid > 0) this.fail("an invalid row under onInvalidRow 'fail'");
    if (v.maxInvalidRows !== undefined && c.invalid > v.maxInvalidRows) this.fail("maxInvalidRows exceeded");
  }

  /** Settles once every range is written, or once a failure left nothing in flight. */
  private check(): void {
    if (this.pumping || this.flushing || this.inFlight > 0) return;
    if (this.failure !== null || (this.ended && this.ranges.length === 0)) void this.writing.then(() => this.settled.resolve());
  }

  private async drop(): Promise<void> {
    const reason = new Error("the file is read again by one worker");
    await Promise.all([this.processed?.abort(reason), this.rejects?.abort(reason)]);
    this.processed = null;
    this.rejects = null;
  }

  private async finished(): Promise<Striped | null> {
    const c = this.counts;
    const ratio = this.req.mappings.validations.maxInvalidRatio;
    if (ratio !== undefined && c.total > 0 && c.invalid / c.total > ratio) {
      await this.drop();
      return null;
    }
    const tail = this.rowsWritten ? "\n]\n" : "]\n";
    await this.processed!.write(tail);
    this.processedSize += tail.length;
    if (this.rejects) {
      await this.rejects.write("\n]\n");
      this.rejectsSize += 3;
    }
    const processMs = Math.round(performance.now() - this.started);
    const processed = this.processed!;
    const rejects = this.rejects as Sink | null;
    const { req, store } = this;
    const outcome: ProcessOutcome = {
      ok: true,
      counts: c,
      errors: this.errors,
      input: this.inputInfo ?? { format: this.plan.format, encoding: "utf-8", gzip: false },
      processed: { key: req.processedKey, size: this.processedSize, rows: c.valid, format: "json", mimetype: "application/json" },
      rejects: rejects ? { key: req.rejectsKey, size: this.rejectsSize, rows: c.skipped + c.quarantined } : null,
      processMs,
    };
    let ended = false;
    return {
      async commit() {
        if (ended) throw new Error("a striped run is committed or discarded once");
        ended = true;
        try {
          const info = await processed.close();
          outcome.processed!.size = info.size;
          if (rejects) outcome.rejects!.size = (await rejects.close()).size;
          else await store.delete(req.rejectsKey);
          return outcome;
        } catch (e) {
          // As a failed run leaves nothing: the other file too, whether it was put in place or not.
          const reason = e instanceof Error ? e : new Error(String(e));
          await Promise.all([processed.abort(reason), rejects?.abort(reason)]);
          await Promise.all([store.delete(req.processedKey).catch(() => {}), store.delete(req.rejectsKey).catch(() => {})]);
          throw e;
        }
      },
      async discard() {
        if (ended) return;
        ended = true;
        const reason = new Error("discarded");
        await Promise.all([processed.abort(reason), rejects?.abort(reason)]);
      },
    };
  }
}
