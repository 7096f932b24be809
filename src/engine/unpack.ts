import { closeSync, openSync, unlinkSync } from "node:fs";
import type { ObjectStore } from "../adapters/storage/port";
import type { GrowingFile, Striped, StripedInput } from "./stripes";
import { trace } from "./trace";
import { type EngineProgress, newEngineProgress, type ProcessOutcome, type ProcessRequest, PROGRESS_BYTES, PROGRESS_ROWS } from "./types";
import type { UnpackReport, UnpackRequest } from "./unpack-worker";

/**
 * Packed input (gzip, OpenPGP) read in stripes (docs/decisions/formats.md,
 * "Packed files in stripes"): a worker thread of its own decrypts and
 * inflates the original once, streaming, into a temp file in the store's
 * temp folder, and the engine's workers read that file in stripes as it
 * grows, as they read an upload still arriving. The temp file is unlinked
 * as soon as it is open: it has no name while it is used, and its space
 * goes back when its descriptors are closed, whatever the outcome, and when
 * the process ends, however it ends. It is at most as large as the limits
 * let the input inflate (MAX_DECOMPRESSED_BYTES).
 */

/** Names of packed files, each layer its own extension: `orders.csv.gz.pgp`. */
const PACKED_NAME = /\.(gz|gzip|pgp|gpg|asc)$/i;
const PGP_LAYER = /\.(pgp|gpg|asc)$/i;

/** The name with its packing extensions taken off: `orders.csv.gz.pgp` is `orders.csv`. */
export function plainName(filename: string): string {
  let name = filename;
  while (PACKED_NAME.test(name)) name = name.replace(PACKED_NAME, "");
  return name;
}

/** The request as the stripes see it: the plain file's name, nothing to decrypt, its size not known yet. */
export function plainRequest(req: ProcessRequest): ProcessRequest {
  return { ...req, filename: plainName(req.filename), pgp: undefined, size: undefined };
}

/** CSV inflates about fourfold from `gzip -1` (more at higher levels): a packed file is read in stripes from a quarter of a plain file's `minSplitBytes`. */
const PACKED_SPLIT_SHARE = 4;

/**
 * Whether `req`'s original is unpacked to a temp file and read in stripes:
 * a packed name (a packed file named otherwise is read whole, as before) of
 * a known size, at least `minSplitBytes / 4`, a store with a temp folder
 * (the local one), the keys when the name says OpenPGP (without them one
 * worker fails the run saying which to set), and a plain file the stripes
 * could read (`mayStripe`, the pool's rule).
 */
export function mayUnpack(req: ProcessRequest, mayStripe: (req: ProcessRequest) => boolean, minSplitBytes: number): boolean {
  if (req.storage.kind !== "local" || !PACKED_NAME.test(req.filename)) return false;
  if (req.size === undefined || req.size < minSplitBytes / PACKED_SPLIT_SHARE) return false;
  let name = req.filename;
  for (; PACKED_NAME.test(name); name = name.replace(PACKED_NAME, "")) if (PGP_LAYER.test(name) && !req.pgp) return false;
  return mayStripe(plainRequest(req));
}

/** Reads the plain request in stripes from `input`, counting into `progress` (the pool's striped read). */
export type StripeAs = (req: ProcessRequest, input: StripedInput, progress: EngineProgress) => Promise<Striped | null>;

const UNPACK_WORKER = new URL("./unpack-worker.ts", import.meta.url);
/** How often the run's progress is brought up to date from the stripes' counters. */
const PROGRESS_EVERY_MS = 250;

/** The temp file as the stripes follow it: grows as the unpacking worker writes. */
class PlainFile implements GrowingFile {
  available = 0;
  size: number | null = null;
  failed: Error | null = null;
  private waiters: (() => void)[] = [];

  constructor(readonly fd: number) {}

  changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  update(change: () => void): void {
    change();
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

/**
 * `req`'s packed original unpacked to a temp file and read in stripes by
 * `stripe`. Answers what the stripes answer, with the outcome's `input`
 * naming the layers taken off (as one worker's read names them); null when
 * the file is to be read whole instead (no temp folder, the stripes gave
 * up); and, when the unpacking refused the file (a bomb, a bad signature,
 * a wrong key), a Striped whose commit answers the failed outcome with the
 * message one worker would have given, without reading it again.
 */
export async function stripeUnpacked(req: ProcessRequest, store: ObjectStore, stripe: StripeAs, progress?: EngineProgress, signal?: AbortSignal): Promise<Striped | null> {
  const files = store.files;
  if (!files) return null;
  const started = performance.now();
  let writeFd = -1;
  let readFd = -1;
  try {
    const path = files.tempPath();
    writeFd = openSync(path, "wx");
    try {
      readFd = openSync(path, "r");
    } finally {
      unlinkSync(path);
    }
  } catch (e) {
    // No temp file (the disk, the folder): one worker reads the original as it is.
    trace(`${req.runId}: no temp file to unpack to (${e instanceof Error ? e.message : String(e)})`);
    if (writeFd >= 0) closeSync(writeFd);
    return null;
  }
  const file = new PlainFile(readFd);
  let layers: Extract<UnpackReport, { type: "layers" }> | null = null;
  let refused: string | null = null;
  let read = 0;
  const worker = new Worker(UNPACK_WORKER) as unknown as Bun.Worker;
  worker.addEventListener("message", (event) => {
    const r = (event as MessageEvent<UnpackReport>).data;
    if (r.type === "layers") layers = r;
    else if (r.type === "failed") {
      if (r.input) refused = r.message;
      trace(`${req.runId}: unpacking stopped: ${r.message}`);
      file.update(() => (file.failed ??= new Error(`unpacking: ${r.message}`)));
    } else {
      read = r.read;
      file.update(() => {
        file.available = r.written;
        if (r.type === "done") file.size = r.written;
      });
    }
  });
  worker.addEventListener("error", (event) => file.update(() => (file.failed ??= new Error((event as ErrorEvent).message || "the unpacking worker failed"))));
  // The write descriptor is closed only once the worker is gone: closed before, its number could be reused by another file that a last write would land in.
  const exited = new Promise<void>((resolve) =>
    worker.addEventListener("close", () => {
      if (file.size === null) file.update(() => (file.failed ??= new Error("the unpacking worker stopped")));
      resolve();
    }),
  );
  const onAbort = () => file.update(() => (file.failed ??= new Error("aborted")));
  signal?.addEventListener("abort", onAbort, { once: true });
  worker.postMessage({ req, fd: writeFd } satisfies UnpackRequest);

  // The stripes count plain bytes; the run's progress counts the original's (the part of it whose rows are read).
  const counters = newEngineProgress();
  const report = () => {
    if (!progress) return;
    progress[PROGRESS_ROWS] = counters[PROGRESS_ROWS]!;
    progress[PROGRESS_BYTES] = file.available > 0 ? Math.min(read, Math.round((read * counters[PROGRESS_BYTES]!) / file.available)) : 0;
  };
  const timer = setInterval(report, PROGRESS_EVERY_MS);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    signal?.removeEventListener("abort", onAbort);
    worker.terminate();
    closeSync(readFd);
    void exited.then(() => closeSync(writeFd));
  };

  let striped: Striped | null;
  try {
    trace(`${req.runId}: unpacked to a temp file and read in stripes`);
    striped = await stripe(plainRequest(req), { kind: "growing", file }, counters);
  } catch (e) {
    close();
    throw e;
  }
  report();
  if (!striped) {
    close();
    return refused === null ? null : refusedBy(refused, counters, started);
  }
  const held = striped;
  return {
    async commit() {
      try {
        const outcome = await held.commit();
        if (outcome.input) {
          const { header, ...read } = outcome.input;
          const found = layers as typeof layers;
          outcome.input = { ...read, gzip: found?.gzip ?? false, ...(found?.pgp ? { pgp: found.pgp } : {}), ...(header ? { header } : {}) };
        }
        outcome.processMs = Math.round(performance.now() - started);
        return outcome;
      } finally {
        close();
      }
    },
    async discard() {
      try {
        await held.discard();
      } finally {
        close();
      }
    },
  };
}

/** The outcome of a file the unpacking refused: nothing of it was kept, so no row counts. */
function refusedBy(message: string, counters: EngineProgress, started: number): Striped {
  counters.fill(0);
  const outcome: ProcessOutcome = {
    ok: false,
    errorMessage: message,
    failure: "input",
    counts: { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 },
    errors: [],
    processed: null,
    rejects: null,
    processMs: Math.round(performance.now() - started),
  };
  return { commit: async () => outcome, discard: async () => {} };
}
