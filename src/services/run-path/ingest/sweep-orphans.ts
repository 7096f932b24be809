import { inArray } from "drizzle-orm";
import type { ServiceContext } from "../../context";

/**
 * A run's folder without a run this long after its last write is a crash's
 * leftover. The original is put in place before the run's row is inserted
 * (src/services/run-path/ingest/start-run.ts) and a failed insert removes it, so only a
 * process that died between the two leaves one; an hour is far beyond that
 * gap, even with the database slow to answer.
 */
export const ORPHAN_AFTER_MS = 60 * 60 * 1000;

/** Run folders looked up in the database at once. */
const BATCH = 500;

/**
 * Removes the stored files of runs that do not exist: originals of uploads
 * that never became runs (the process died after storing the file and before
 * recording the run). A folder is removed only when no run has its id and
 * every object in it is older than `olderThanMs`, so an upload being
 * recorded right now is never touched. Works on both stores through the
 * object-store port; answers how many folders were removed.
 */
export async function sweepOrphanRuns(ctx: ServiceContext, opts: { olderThanMs?: number; now?: number } = {}): Promise<number> {
  // Object times are the store's wall clock, not the service's (injectable) one.
  const cutoff = (opts.now ?? Date.now()) - (opts.olderThanMs ?? ORPHAN_AFTER_MS);
  let removed = 0;
  for await (const workspace of prefixesUnder(ctx, "ws/")) {
    let batch: string[] = [];
    const check = async () => {
      removed += await removeOrphans(ctx, batch, cutoff);
      batch = [];
    };
    for await (const folder of prefixesUnder(ctx, `${workspace}runs/`)) {
      batch.push(folder);
      if (batch.length >= BATCH) await check();
    }
    if (batch.length > 0) await check();
  }
  if (removed > 0) ctx.log.info({ removed }, "storage sweep removed the files of runs that were never recorded");
  return removed;
}

async function* prefixesUnder(ctx: ServiceContext, prefix: string): AsyncGenerator<string> {
  let after: string | undefined;
  do {
    const page = await ctx.storage.list(prefix, { delimiter: "/", after, limit: 1000 });
    yield* page.prefixes;
    after = page.next ?? undefined;
  } while (after !== undefined);
}

/** `folders` are `ws/{workspace}/runs/{run}/`; those whose run does not exist and whose files are all old are removed. */
async function removeOrphans(ctx: ServiceContext, folders: string[], cutoff: number): Promise<number> {
  const idOf = (folder: string) => folder.split("/")[3]!;
  const runs = ctx.db.t.pipelineRuns;
  const known = new Set(
    (await ctx.db.read.select({ id: runs.id }).from(runs).where(inArray(runs.id, folders.map(idOf)))).map((r) => r.id),
  );
  let removed = 0;
  for (const folder of folders) {
    if (known.has(idOf(folder))) continue;
    const { objects, next } = await ctx.storage.list(folder, { limit: 1000 });
    if (next !== null || objects.some((o) => o.updatedAt.getTime() >= cutoff)) continue;
    await ctx.storage.deletePrefix(folder);
    removed++;
  }
  return removed;
}
