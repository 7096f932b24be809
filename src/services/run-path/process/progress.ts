import { and, eq } from "drizzle-orm";
import { type EngineProgress, newEngineProgress, PROGRESS_BYTES, PROGRESS_ROWS } from "../../../engine/types";
import type { ServiceContext } from "../../context";
import { type RunRow } from "../../runs/record";
import { publishStatus } from "../announce/live";

/** `metadata.progress` while a run is processing (docs/decisions/runs.md). */
export interface RunProgress {
  rowsRead: number;
  bytesRead: number;
  /** The original's size. */
  bytesTotal: number;
  rowsPerSecond: number;
  /** When these counts were taken. */
  at: string;
}

/**
 * Samples the engine's counters (written by its threads, read here) once
 * an interval (PROGRESS_INTERVAL_MS: at most one write, and one event, a run
 * per interval) while `row` is processed, and records them on the run: a
 * guarded update (only while this attempt is still `processing`) and a
 * run event, so that subscriptions push the run with its progress. A
 * sample that finds nothing new writes nothing. `stop` ends it and waits
 * for a write in flight.
 */
export function reportProgress(ctx: ServiceContext, row: RunRow): { counters: EngineProgress; stop(): Promise<void> } {
  const counters = newEngineProgress();
  const started = performance.now();
  let lastRows = -1;
  let lastBytes = -1;
  let writing: Promise<void> | null = null;
  const run = ctx.db.t.pipelineRuns;

  async function write(): Promise<void> {
    const rowsRead = counters[PROGRESS_ROWS]!;
    const bytesRead = Math.min(counters[PROGRESS_BYTES]!, row.size);
    if (rowsRead === lastRows && bytesRead === lastBytes) return;
    lastRows = rowsRead;
    lastBytes = bytesRead;
    const seconds = (performance.now() - started) / 1000;
    const progress: RunProgress = {
      rowsRead,
      bytesRead,
      bytesTotal: row.size,
      rowsPerSecond: seconds > 0 ? Math.round(rowsRead / seconds) : 0,
      at: ctx.clock.now().toISOString(),
    };
    const moved = await ctx.db.tx((w) =>
      w
        .update(run)
        .set({ metadata: { ...row.metadata, progress } })
        .where(and(eq(run.id, row.id), eq(run.status, "processing"), eq(run.attempt, row.attempt)))
        .returning({ id: run.id }),
    );
    if (moved.length > 0) await publishStatus(ctx, row, "processing", "processing");
  }

  const timer = setInterval(() => {
    if (writing) return;
    writing = write()
      .catch((err) => ctx.log.warn({ err, runId: row.id }, "run progress not recorded"))
      .finally(() => (writing = null));
  }, ctx.settings.progressIntervalMs);
  return {
    counters,
    async stop() {
      clearInterval(timer);
      await writing;
    },
  };
}
