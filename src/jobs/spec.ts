import type { Database } from "../../db/client";
import type { Logger } from "../logger";
import type { RetryPolicy } from "./backoff";
import type { JobSpec } from "./port";

/** What both queue implementations are built with (src/jobs/index.ts fills the defaults). */
export interface QueueSettings {
  db: Database;
  log: Logger;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  retry: RetryPolicy;
}

export const DEFAULT_MAX_ATTEMPTS = 5;

/** A bad spec is a programming error in the caller, so it throws rather than enqueueing something no worker can run. */
export function checkSpec(spec: JobSpec): void {
  if (!spec.name) throw new Error("job spec: name is required");
  if (spec.maxAttempts !== undefined && (!Number.isInteger(spec.maxAttempts) || spec.maxAttempts < 1 || spec.maxAttempts > 1000)) {
    throw new Error(`job spec "${spec.name}": maxAttempts must be an integer from 1 to 1000`);
  }
  if (spec.runAt !== undefined && Number.isNaN(spec.runAt.getTime())) throw new Error(`job spec "${spec.name}": runAt is not a valid date`);
  if (spec.key !== undefined && spec.key.length === 0) throw new Error(`job spec "${spec.name}": key must not be empty`);
}
