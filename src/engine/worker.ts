import { storeCache } from "../adapters/storage/index";
import { prepare, processFile } from "./process";
import { planSplit, processStripe, readHead } from "./split";
import type { SplitPlan, StripeResult, StripeSource, StripeTask } from "./stripe-plan";
import { trace } from "./trace";
import { type EngineProgress, failedOutcome, type ProcessOutcome, type ProcessRequest } from "./types";

/**
 * Bun Worker entry (src/engine/pool starts it). Messages in, each
 * answered with the same `id` except `prepare`:
 * - `process`: the whole file; answers `{ id, outcome }`.
 * - `plan`: whether and how the file may be read in stripes, from its first
 *   `headBytes`; answers `{ id, plan }` (null: read it whole).
 * - `stripe`: one stripe of a file (src/engine/split.ts); answers
 *   `{ id, stripe }`, its output buffers transferred. `spare` buffers come
 *   back from the coordinator for reuse.
 * - `prepare`: compile the schema's validator ahead of the file's stripes.
 * processFile and processStripe never throw, so the worker lives on after a
 * bad file; the pool replaces it if it dies anyway.
 */
export type WorkerRequest =
  | { type: "process"; id: number; req: ProcessRequest; progress?: EngineProgress }
  | { type: "plan"; id: number; req: ProcessRequest; source: StripeSource; headBytes: number }
  | { type: "stripe"; id: number; req: ProcessRequest; task: StripeTask; spare: ArrayBuffer[] }
  | { type: "prepare"; req: ProcessRequest };

export type WorkerReply =
  | { id: number; outcome: ProcessOutcome }
  | { id: number; plan: SplitPlan | null }
  | { id: number; stripe: StripeResult };

declare const self: Worker;

// createObjectStore loads the S3 client only for S3 settings: it doubles a worker's start-up time and adds ~15 MB to each.
const storeFor = storeCache();

/** Output buffers handed back by the coordinator, kept for the next stripe (bounded: they are resident memory). */
const spare: ArrayBuffer[] = [];
const MAX_SPARE = 10;

const reply = (r: WorkerReply, transfer: ArrayBuffer[] = []) => self.postMessage(r, { transfer });

function storeFailure(e: unknown): ProcessOutcome {
  const err = e instanceof Error ? e : new Error(String(e));
  return failedOutcome(`The engine could not open the object store (${err.message}); the run can be retried.`, err.stack);
}

/**
 * Messages are handled one after another, in the order they came: the pool
 * sends a worker its next stripe while it is still on the current one (so it
 * never waits for the main thread between stripes).
 */
let queue: Promise<void> = Promise.resolve();
self.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const msg = event.data;
  // An unexpected failure still kills the worker (the pool replaces it), as it would outside the queue.
  queue = queue
    .then(() => handle(msg))
    .catch((e) => {
      setTimeout(() => {
        throw e;
      });
    });
};

async function handle(msg: WorkerRequest): Promise<void> {
  switch (msg.type) {
    case "prepare":
      prepare(msg.req);
      return;
    case "plan": {
      let plan: SplitPlan | null = null;
      try {
        prepare(msg.req);
        const head = await readHead(msg.req, storeFor(msg.req.storage), msg.source, msg.headBytes);
        plan = await planSplit(msg.req, head);
      } catch {
        plan = null;
      }
      trace(`${msg.req.runId}: planned${plan ? "" : " (read whole)"}`);
      reply({ id: msg.id, plan });
      return;
    }
    case "stripe": {
      for (const b of msg.spare) if (spare.length < MAX_SPARE) spare.push(b);
      trace(`${msg.req.runId}: stripe ${msg.task.index} [${msg.task.start}, ${msg.task.end}) starts`);
      let result: StripeResult;
      try {
        result = await processStripe(msg.req, storeFor(msg.req.storage), msg.task, spare);
      } catch (e) {
        result = { index: msg.task.index, ok: false, counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], rejects: "", buffers: [], lengths: [], size: 0, detail: String(e) };
      }
      if (spare.length > MAX_SPARE) spare.length = MAX_SPARE;
      trace(`${msg.req.runId}: stripe ${msg.task.index}: ${result.counts.total} rows${result.ok ? "" : ` (stopped: ${result.detail})`}`);
      reply({ id: msg.id, stripe: result }, result.buffers);
      return;
    }
    case "process": {
      trace(`${msg.req.runId}: one worker reads the whole file`);
      let outcome: ProcessOutcome;
      try {
        outcome = await processFile(msg.req, storeFor(msg.req.storage), undefined, msg.progress);
      } catch (e) {
        // Only opening the store can get here.
        outcome = storeFailure(e);
      }
      reply({ id: msg.id, outcome });
      return;
    }
  }
}
