import type { ObjectStore } from "../../adapters/storage/port";
import type { RowError, RunCounts } from "../../domain/runs";
import type { SplitPlan, StripeResult } from "../stripe-plan";
import type { ProcessOutcome, ProcessRequest } from "../types";
import { openMainThreadSink, type Sink } from "../write/sink";
import type { Striped } from "./index";

/** Row errors kept in the outcome (as processFile keeps). */
const MAX_REPORTED_ERRORS = 20;

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

/**
 * The output side of a striped run: stripes written in file order to the
 * processed file (the workers' buffers as they are, no copy) and the rejects
 * (renumbered over the whole file), with the run's counts and first errors.
 * Nothing is at the output keys until the run is committed.
 */
export class OrderedOutput {
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
  ) {}

  async open(): Promise<void> {
    this.processed = openMainThreadSink(this.store, this.req.processedKey, "application/json");
    await this.processed.write("[\n");
    this.processedSize = 2;
  }

  /**
   * Appends the next stripe in file order; `recycle` takes back buffers the
   * sink copied. Answers why the file must go to one worker instead (a budget
   * exceeded over the file so far), or null.
   */
  async write(r: StripeResult, recycle: (buffers: ArrayBuffer[]) => void): Promise<string | null> {
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
        if (processed.copies) recycle([buf]);
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
    if ((v.onInvalidRow ?? "fail") === "fail" && c.invalid > 0) return "an invalid row under onInvalidRow 'fail'";
    if (v.maxInvalidRows !== undefined && c.invalid > v.maxInvalidRows) return "maxInvalidRows exceeded";
    return null;
  }

  /** Drops what was written. */
  async drop(): Promise<void> {
    const reason = new Error("the file is read again by one worker");
    await Promise.all([this.processed?.abort(reason), this.rejects?.abort(reason)]);
    this.processed = null;
    this.rejects = null;
  }

  /** Every stripe written: the files ended, ready to commit; null when the invalid-row ratio gives the file to one worker. */
  async finish(format: SplitPlan["format"], started: number): Promise<Striped | null> {
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
    const processMs = Math.round(performance.now() - started);
    const processed = this.processed!;
    const rejects = this.rejects as Sink | null;
    const { req, store } = this;
    const outcome: ProcessOutcome = {
      ok: true,
      counts: c,
      errors: this.errors,
      input: this.inputInfo ?? { format, encoding: "utf-8", gzip: false },
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
