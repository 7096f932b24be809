import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { inputRowsKnown, inputRowsOf, rejectedInputRows } from "./input-rows";
import { rowMatcher, searchRows } from "./row-search";
import { loadRuns, processedJsonKey, type RunFile } from "./runs";
import { type SearchFilesResult, type SearchHit, SearchFilesInput } from "./shapes";

/**
 * Searches the processed files of the listed runs (each must be a run of the
 * caller's workspace). Hits are listed run by run in the order given, then
 * by row; `offset`/`limit` page over that list and `total` counts all hits.
 * Files are read one after the other, each streamed, so only the page's
 * rows are ever held; the next file's read is opened while one is scanned.
 * Runs without a processed JSON file yet are skipped and not counted in
 * `filesSearched`. Each hit also names its input row (./input-rows.ts).
 */
export async function searchFiles(ctx: ServiceContext, opts: CallOptions & { input: SearchFilesInput }): Promise<SearchFilesResult> {
  const started = performance.now();
  const input = parseInput(SearchFilesInput, opts.input);
  const ids = [...new Set(input.pipelineRunIds)];
  const runs = await loadRuns(ctx, { workspaceId: opts.actor.workspaceId, ids, field: "pipelineRunIds" });
  const files = runs.flatMap((run) => {
    const key = processedJsonKey(run);
    return key ? [{ run, key }] : [];
  });
  const matcher = rowMatcher(input);
  const results: SearchHit[] = [];
  let total = 0;
  let filesSearched = 0;
  const open = (i: number) => {
    if (i >= files.length) return null;
    const p = ctx.storage.get(files[i]!.key);
    p.catch(() => {}); // awaited below; not an unhandled rejection meanwhile
    return p;
  };
  let next = open(0);
  try {
    for (let i = 0; i < files.length; i++) {
      const { run } = files[i]!;
      const stream = await next!;
      next = open(i + 1);
      // A processed file recorded but gone from the store is skipped like a run without one.
      if (!stream) continue;
      filesSearched++;
      const first = results.length;
      total += await searchRows(stream, matcher, {
        skip: Math.max(0, input.offset - total),
        take: input.limit - results.length,
        onHit: (rowIndex, rowData, matchingFields) =>
          results.push({
            pipelineRunId: run.id,
            filename: run.filename,
            rowIndex,
            inputRow: null,
            rowData,
            matchingFields,
            processedAt: run.processedAt,
            pipelineName: run.pipelineName,
            clientName: run.clientName,
          }),
      });
      await addInputRows(ctx, run, results.slice(first));
    }
  } finally {
    next?.then((s) => s?.cancel()).catch(() => {});
  }
  return {
    results,
    pagination: { total, offset: input.offset, limit: input.limit, returned: results.length },
    metadata: {
      searchTerm: input.searchTerm ? input.searchTerm : null,
      caseSensitive: input.caseSensitive,
      searchDurationMs: Math.round(performance.now() - started),
      filesSearched,
    },
  };
}

/** Sets the input row of one run's hits (ascending rowIndex), from the run's rejects file. */
async function addInputRows(ctx: ServiceContext, run: RunFile, hits: SearchHit[]): Promise<void> {
  if (hits.length === 0 || !inputRowsKnown(run)) return;
  const rejected = run.rejectsKey ? rejectedInputRows(ctx.storage, run.rejectsKey) : (async function* () {})();
  const rows = await inputRowsOf(
    hits.map((h) => h.rowIndex),
    rejected,
  );
  hits.forEach((h, i) => {
    h.inputRow = rows[i]!;
  });
}
