import { createObjectStore } from "../adapters/storage/index";
import type { ObjectStore, StorageConfig } from "../adapters/storage/port";
import { prepare, processFile } from "./process";
import { type PartResult, type PartSpec, planSplit, processPart, processSplit } from "./split";
import { trace } from "./trace";
import type { ProcessOutcome, ProcessRequest } from "./types";

/**
 * Bun Worker entry (src/engine/pool.ts starts it). Messages in:
 * - `{ type: "process", id, req, helpers }`: one file; with `helpers` > 0 the
 *   pool holds that many idle workers for it, and this worker may split the
 *   file (src/engine/split.ts): it answers `{ id, plan }` first (the helpers'
 *   parts, possibly none), and `{ id, outcome }` at the end.
 * - `{ type: "part", id, req, part }`: a helper's range; answers `{ id, partResult }`.
 * - `{ type: "partResult", id, result }`: a helper's result, relayed to the lead of job `id`.
 * - `{ type: "prepare", req }`: sent to a worker held for a job's helpers, so
 *   that it compiles the schema's validator while the lead plans; no answer.
 * processFile never throws, so the worker lives on after a bad file; the
 * pool replaces it if it dies anyway. `{ id, cancelParts }` asks the pool to
 * stop this job's helpers (the lead reads the file alone).
 */
export type WorkerRequest =
  | { type?: "process"; id: number; req: ProcessRequest; helpers?: number; minSplitBytes?: number }
  | { type: "prepare"; req: ProcessRequest }
  | { type: "part"; id: number; req: ProcessRequest; part: PartSpec }
  | { type: "partResult"; id: number; result: PartResult };

export type WorkerReply =
  | { id: number; outcome: ProcessOutcome }
  | { id: number; plan: PartSpec[] }
  | { id: number; partResult: PartResult }
  | { id: number; cancelParts: true };

declare const self: Worker;

// A worker serves one service, so one store per distinct configuration is a handful at most.
const stores = new Map<string, ObjectStore>();
// createObjectStore loads the S3 client only for S3 settings: it doubles a worker's start-up time and adds ~15 MB to each.
function storeFor(cfg: StorageConfig): ObjectStore {
  const key = JSON.stringify(cfg);
  let store = stores.get(key);
  if (!store) {
    store = createObjectStore(cfg);
    stores.set(key, store);
  }
  return store;
}

/** Helper results awaited by the lead of each job here. */
const awaiting = new Map<number, (result: PartResult) => void>();

const reply = (r: WorkerReply) => self.postMessage(r);

async function processLead(id: number, req: ProcessRequest, store: ObjectStore, helpers: number, minSplitBytes: number | undefined): Promise<ProcessOutcome> {
  trace(`${req.runId}: received (lead, ${helpers} helpers held)`);
  // The validator is compiled first (cached), while the helpers held for this file compile theirs: all parts then start together.
  if (helpers > 0) prepare(req);
  const plan = helpers > 0 ? await planSplit(req, store, { parts: helpers + 1, minBytes: minSplitBytes }).catch(() => null) : null;
  // Always answered, so the pool releases the workers it held for this file.
  reply({ id, plan: plan ? plan.parts.slice(1) : [] });
  trace(`${req.runId}: planned, bytes per part ${plan ? plan.parts.map((p) => p.end - p.start).join(", ") : "(not split)"}`);
  if (!plan) return processFile(req, store);
  const waiting = plan.parts.slice(1).map(() => Promise.withResolvers<PartResult>());
  let failed = false;
  awaiting.set(id, (result) => {
    if (!result.ok) failed = true;
    waiting[result.index - 1]?.resolve(result);
  });
  try {
    const outcome = await processSplit(
      req,
      store,
      plan,
      waiting.map((w) => w.promise),
      () => failed,
    );
    if (outcome) return outcome;
  } finally {
    awaiting.delete(id);
  }
  reply({ id, cancelParts: true });
  return processFile(req, store);
}

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const msg = event.data;
  if (msg.type === "partResult") {
    awaiting.get(msg.id)?.(msg.result);
    return;
  }
  if (msg.type === "prepare") {
    prepare(msg.req);
    return;
  }
  if (msg.type === "part") {
    trace(`${msg.req.runId}: part ${msg.part.index} starts`);
    let result: PartResult;
    try {
      result = await processPart(msg.req, storeFor(msg.req.storage), msg.part);
    } catch (e) {
      result = { index: msg.part.index, ok: false, counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], rejects: false, rowsSize: 0, detail: String(e) };
    }
    reply({ id: msg.id, partResult: result });
    return;
  }
  const { id, req } = msg;
  let outcome: ProcessOutcome;
  let store: ObjectStore | null = null;
  try {
    store = storeFor(req.storage);
    outcome = await processLead(id, req, store, msg.helpers ?? 0, msg.minSplitBytes);
  } catch (e) {
    // Only opening the store can get here.
    const err = e instanceof Error ? e : new Error(String(e));
    outcome = {
      ok: false,
      errorMessage: `The engine could not open the object store (${err.message}); the run can be retried.`,
      internalError: err.stack,
      counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 },
      errors: [],
      processed: null,
      rejects: null,
      processMs: 0,
    };
  }
  reply({ id, outcome });
  if (store?.kind === "local") hashOutputs(store, outcome);
};

/**
 * The local store computes an output's etag (the md5 of its bytes) when it is
 * first asked for, so that a run does not wait for the hash of its output.
 * Asking here, once the outcome is reported, does it on this worker while it
 * is otherwise idle, rather than in the latency of the file's first download
 * link or listing. If the worker stops first, the first reader computes it.
 */
function hashOutputs(store: ObjectStore, outcome: ProcessOutcome): void {
  const keys = [outcome.processed?.key, outcome.rejects?.key].filter((k): k is string => k !== undefined);
  void (async () => {
    for (const key of keys) await store.stat(key);
  })().catch(() => {});
}
