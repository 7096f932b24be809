import { FpsNetworkError, retryAfterSeconds } from "./errors.js";

export interface RetryOptions {
  /** Attempts after the first (default 4). 0: never retry. */
  retries?: number;
  /** First backoff in ms (default 250); it doubles each attempt, with full jitter. */
  minDelayMs?: number;
  /** Largest wait in ms, Retry-After included (default 30,000). */
  maxDelayMs?: number;
}

const RETRY_STATUS = new Set([429, 503]);
const SAFE = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** Whether a request may be sent twice: a safe or idempotent method, or a POST/PATCH that carries an Idempotency-Key. */
export function replayable(req: Request): boolean {
  return SAFE.has(req.method) || req.headers.has("idempotency-key");
}

export const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });

/** The wait before attempt `attempt` (1-based): Retry-After when given (capped), else exponential backoff with full jitter. */
export function backoff(attempt: number, opts: Required<RetryOptions>, retryAfter?: number): number {
  if (retryAfter !== undefined) return Math.min(opts.maxDelayMs, retryAfter * 1000);
  const ceiling = Math.min(opts.maxDelayMs, opts.minDelayMs * 2 ** (attempt - 1));
  return Math.round(Math.random() * ceiling);
}

export function retryDefaults(o: RetryOptions = {}): Required<RetryOptions> {
  return { retries: o.retries ?? 4, minDelayMs: o.minDelayMs ?? 250, maxDelayMs: o.maxDelayMs ?? 30_000 };
}

/**
 * A fetch that retries 429, 503 and network errors for requests that may be
 * replayed (`replayable`), honouring Retry-After. Others go once. Bodies are
 * small JSON here (uploads do their own retries from their source).
 */
export function retryingFetch(base: typeof fetch, options: RetryOptions = {}): (req: Request) => Promise<Response> {
  const opts = retryDefaults(options);
  return async (req: Request) => {
    const again = opts.retries > 0 && replayable(req);
    for (let attempt = 1; ; attempt++) {
      const sent = again ? req.clone() : req;
      let res: Response;
      try {
        res = await base(sent);
      } catch (e) {
        if (req.signal?.aborted || !again || attempt > opts.retries) {
          throw req.signal?.aborted ? e : new FpsNetworkError(`${req.method} ${new URL(req.url).pathname}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
        }
        await sleep(backoff(attempt, opts), req.signal);
        continue;
      }
      if (!again || !RETRY_STATUS.has(res.status) || attempt > opts.retries) return res;
      await res.body?.cancel().catch(() => {});
      await sleep(backoff(attempt, opts, retryAfterSeconds(res.headers.get("retry-after"))), req.signal);
    }
  };
}
