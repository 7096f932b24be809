export interface RetryPolicy {
  /** Delay before the second attempt; each later one doubles it. */
  baseMs: number;
  /** Ceiling of one delay. */
  maxMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { baseMs: 5_000, maxMs: 15 * 60_000 };

/**
 * Exponential backoff with "equal jitter": half the delay is fixed, half is
 * random, so retries of many jobs that failed together (a storage outage)
 * spread out without any one of them retrying almost at once.
 * `failedAttempt` is 1 after the first attempt failed.
 */
export function retryDelayMs(failedAttempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, failedAttempt - 1));
  return Math.round(exp / 2 + (exp / 2) * random());
}
