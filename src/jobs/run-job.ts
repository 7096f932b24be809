import { runOutsideRequest } from "../domain/request-context";
import type { Logger } from "../logger";
import { type RetryPolicy, retryDelayMs } from "./backoff";
import type { JobDefinition } from "./port";

/** What the queue does with the job after one attempt. */
export type Outcome =
  | { status: "completed" }
  | { status: "retry"; error: Error; delayMs: number }
  /** No more attempts: given up after the last one, or a payload no attempt could ever accept. */
  | { status: "failed"; error: Error };

export interface RunJobOptions {
  definition: JobDefinition<unknown>;
  payload: unknown;
  jobId: string;
  /** 1 on the first attempt; above maxAttempts when the last attempt was lost with its worker. */
  attempt: number;
  maxAttempts: number;
  signal: AbortSignal;
  retry: RetryPolicy;
  log: Logger;
}

export function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

/**
 * One attempt of one job, the same on both queues: parse the payload, run
 * the handler, and decide between done, retry with backoff, and give up
 * (calling `onGiveUp` once). The queue only records the outcome.
 */
export function runJob(opts: RunJobOptions): Promise<Outcome> {
  // A queue woken by a request's enqueue must not lend the job that request's id.
  return runOutsideRequest(() => runOnce(opts));
}

async function runOnce(opts: RunJobOptions): Promise<Outcome> {
  const { definition, jobId, attempt, maxAttempts, log } = opts;
  let payload: unknown;
  try {
    payload = definition.parse(opts.payload);
  } catch (e) {
    // The payload will not change between attempts, so retrying would only
    // repeat the error; the job fails at once and keeps the reason.
    const error = new Error(`job payload rejected by "${definition.name}": ${asError(e).message}`);
    log.error({ jobId, job: definition.name, err: error }, "job payload rejected; job failed without retry");
    return { status: "failed", error };
  }

  if (attempt > maxAttempts) {
    const error = new Error(
      `the worker running attempt ${maxAttempts} of ${maxAttempts} stopped before finishing (process killed, crashed or out of memory); the job was given up`,
    );
    await giveUp(opts, payload, error);
    return { status: "failed", error };
  }

  try {
    await definition.handle(payload, { jobId, attempt, maxAttempts, signal: opts.signal });
    return { status: "completed" };
  } catch (e) {
    const error = asError(e);
    if (attempt >= maxAttempts) {
      log.error({ jobId, job: definition.name, attempt, err: error }, "job failed on its last attempt; giving up");
      await giveUp(opts, payload, error);
      return { status: "failed", error };
    }
    const delayMs = retryDelayMs(attempt, opts.retry);
    log.warn({ jobId, job: definition.name, attempt, maxAttempts, delayMs, err: error }, "job failed; will retry");
    return { status: "retry", error, delayMs };
  }
}

async function giveUp(opts: RunJobOptions, payload: unknown, error: Error): Promise<void> {
  // A job handed back at shutdown is another worker's now; it gives up, not us.
  if (opts.signal.aborted || !opts.definition.onGiveUp) return;
  try {
    await opts.definition.onGiveUp(payload, error);
  } catch (e) {
    opts.log.error({ jobId: opts.jobId, job: opts.definition.name, err: asError(e) }, "onGiveUp failed");
  }
}
