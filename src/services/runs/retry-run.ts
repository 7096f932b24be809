import type { CallOptions, ServiceContext } from "../context";
import { ingest } from "../run-path/ingest";
import type { RunRecord } from "./record";

/** The retry door: a failed run's next attempt enters the run path like any file (run-path/ingest/retry.ts). */
export function retryRun(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<RunRecord> {
  return ingest(ctx, { door: "retry", ...opts });
}
