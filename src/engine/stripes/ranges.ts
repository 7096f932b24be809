import { read } from "node:fs";
import type { ObjectStore } from "../../adapters/storage/port";
import { cutIn, HEAD_BYTES, type SplitPlan, type StripeResult, type StripeSource } from "../stripe-plan";
import type { ProcessRequest } from "../types";
import type { StripedInput } from "./index";

/** Thrown to give the file up to one worker. */
export class GiveUp extends Error {}

/** A byte range of the file; ranges[0] of a run always starts at a proven record boundary. */
export interface Range {
  start: number;
  /** null until the next cut (or the file's end) is found. */
  end: number | null;
  /** Ends at the file's end. */
  last: boolean;
  state: "waiting" | "running" | "done";
  result?: StripeResult;
}

/** How far past a stripe's nominal end a line end is looked for; a longer line makes the file go to one worker. */
const CUT_WINDOW = 1024 * 1024;

/** Stripes at a file's end are smaller, but not smaller than this: the smaller a stripe, the likelier a cut inside a quoted field. */
const MIN_SMALL_STRIPE = 64 * 1024;

export interface RangeOptions {
  stripeBytes: number;
  /** The file's last bytes where stripes are smaller (one full stripe per worker). */
  tailBytes: number;
  signal?: AbortSignal;
  /** Why the run stopped, if it did: a wait for bytes then gives up. */
  stopped(): string | null;
}

/**
 * The input side of a striped run: the file's bytes (stored, or still
 * arriving) and the ranges it is cut into, in file order. The open (last)
 * range ends at a guessed cut about `stripeBytes` on: the first likely
 * record boundary in a window read there (stripe-plan.ts `cutIn`).
 */
export class StripeRanges {
  readonly source: StripeSource;
  plan!: SplitPlan;
  /** The ranges not yet written, in file order. */
  readonly list: Range[] = [];
  /** The last range reaches the file's end. */
  ended = false;
  private extending: Promise<void> | null = null;

  constructor(
    private readonly req: ProcessRequest,
    private readonly store: ObjectStore,
    private readonly input: StripedInput,
    private readonly opts: RangeOptions,
  ) {
    this.source = input.kind === "store" ? { kind: "store" } : { kind: "fd", fd: input.file.fd };
  }

  /** The bytes to look at for the format and the header, once they are there. */
  head(): Promise<number> {
    return this.bytesUpTo(HEAD_BYTES);
  }

  /** Starts the ranges after the header; false when the file holds nothing after it. */
  begin(plan: SplitPlan): boolean {
    this.plan = plan;
    const size = this.size();
    if (size !== null && plan.prefixEnd >= size) return false;
    this.list.push({ start: plan.prefixEnd, end: null, last: false, state: "waiting" });
    return true;
  }

  size(): number | null {
    return this.input.kind === "store" ? this.input.size : this.input.file.size;
  }

  /** Waits until `n` bytes are there (or the file is complete with fewer); answers how many there are to read, at most n. */
  private async bytesUpTo(n: number): Promise<number> {
    if (this.input.kind === "store") return Math.min(n, this.input.size);
    const file = this.input.file;
    for (;;) {
      if (this.opts.signal?.aborted) throw this.opts.signal.reason;
      const stopped = this.opts.stopped();
      if (stopped !== null) throw new GiveUp(stopped);
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
  extend(): Promise<void> {
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
  inTail(start: number): boolean {
    const size = this.size();
    return size !== null && size - start <= this.opts.tailBytes;
  }

  /** How far on from `start` the next cut is looked for: `stripeBytes`, less in the tail (above), never below MIN_SMALL_STRIPE (or stripeBytes, if smaller). */
  private nominalBytes(start: number): number {
    const full = this.opts.stripeBytes;
    const floor = Math.min(full, MIN_SMALL_STRIPE);
    return this.inTail(start) ? Math.max(Math.floor(full / 4), floor) : full;
  }

  private async findEnd(): Promise<void> {
    const open = this.list[this.list.length - 1];
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
        this.list.push({ start: cut, end: null, last: false, state: "waiting" });
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
}
