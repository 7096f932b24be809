import { createObjectStore } from "../adapters/storage/index";
import type { ObjectStore, StorageConfig } from "../adapters/storage/port";
import { processFile } from "./process";
import type { ProcessOutcome, ProcessRequest } from "./types";

/**
 * Bun Worker entry (src/engine/pool.ts starts it): one request at a time,
 * `{ id, req }` in, `{ id, outcome }` out. processFile never throws, so the
 * worker lives on after a bad file; the pool replaces it if it dies anyway.
 */
export interface WorkerRequest {
  id: number;
  req: ProcessRequest;
}
export interface WorkerReply {
  id: number;
  outcome: ProcessOutcome;
}

declare const self: Worker;

// A worker serves one service, so one store per distinct configuration is a handful at most.
const stores = new Map<string, ObjectStore>();
function storeFor(cfg: StorageConfig): ObjectStore {
  const key = JSON.stringify(cfg);
  let store = stores.get(key);
  if (!store) {
    store = createObjectStore(cfg);
    stores.set(key, store);
  }
  return store;
}

self.onmessage = async (event: MessageEvent<WorkerRequest>) => {
  const { id, req } = event.data;
  let outcome: ProcessOutcome;
  try {
    outcome = await processFile(req, storeFor(req.storage));
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
  self.postMessage({ id, outcome } satisfies WorkerReply);
};
