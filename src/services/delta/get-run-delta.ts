import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { loadRun, requireProcessedJson, type RunFile } from "../files/runs";
import { multisetDiff, type MultisetDiff, type RowRefs } from "./multiset-diff";
import { type DeltaChange, DeltaQuery, type RunDelta } from "./shapes";

/**
 * The difference between two runs of one pipeline, as whole records: a row
 * of the compare run not in the base is `added`, a row of the base not in
 * the compare is `removed` (a changed row is one of each), counted as a
 * multiset (a row twice in the base and once in the compare is one
 * `removed`). `changes` are ordered by rowIndex, removed before added at the
 * same index, and paged; only the page's records are read back, by range.
 */
export async function getRunDelta(ctx: ServiceContext, opts: CallOptions & { query: Record<string, unknown> }): Promise<RunDelta> {
  const q = parseInput(DeltaQuery, opts.query);
  const workspaceId = opts.actor.workspaceId;
  // Both are looked up before either refusal is thrown, so the error names the base run first whichever lookup ends first.
  const [baseResult, compareResult] = await Promise.allSettled([
    loadRun(ctx, { workspaceId, id: q.baseRunId, field: "baseRunId" }),
    loadRun(ctx, { workspaceId, id: q.compareRunId, field: "compareRunId" }),
  ]);
  if (baseResult.status === "rejected") throw baseResult.reason;
  if (compareResult.status === "rejected") throw compareResult.reason;
  const base = baseResult.value;
  const compare = compareResult.value;
  if (base.pipelineId !== compare.pipelineId) {
    throw new AppError(
      "invalid_input",
      `compareRunId: pipeline run '${compare.id}' is of pipeline '${compare.pipelineId}', not of the base run's pipeline '${base.pipelineId}'; a delta compares two runs of the same pipeline`,
    );
  }
  const baseKey = requireProcessedJson(base, "baseRunId");
  const compareKey = requireProcessedJson(compare, "compareRunId");
  const diff = await cachedDiff(ctx, base, compare, baseKey, compareKey);

  const total = diff.removed.count + diff.added.count;
  const from = (q.page - 1) * q.limit;
  const picks = pageOf(diff, from, q.limit);
  const changes: DeltaChange[] = await mapLimited(picks, 8, async (c) => ({
    type: c.type,
    rowIndex: c.rowIndex,
    record: await readRecord(ctx, c.type === "removed" ? baseKey : compareKey, c.offset, c.length),
  }));
  return {
    baseRunId: base.id,
    compareRunId: compare.id,
    pipelineId: base.pipelineId,
    summary: {
      baseCount: diff.baseCount,
      compareCount: diff.compareCount,
      added: diff.added.count,
      removed: diff.removed.count,
      unchanged: diff.unchanged,
    },
    changes,
    pagination: { page: q.page, limit: q.limit, total, totalPages: Math.ceil(total / q.limit) },
  };
}

interface Pick {
  type: "added" | "removed";
  rowIndex: number;
  offset: number;
  length: number;
}

/** Entries [from, from + limit) of the merge of removed and added by rowIndex (removed first on a tie). */
export function pageOf(diff: MultisetDiff, from: number, limit: number): Pick[] {
  const r = diff.removed;
  const a = diff.added;
  // The merge position of the page's first entry: how many removed entries precede it, by binary search.
  let lo = Math.max(0, from - a.count);
  let hi = Math.min(from, r.count);
  while (lo < hi) {
    const i = (lo + hi) >> 1; // removed entries taken
    const j = from - i; // added entries taken
    // Too few removed taken when the next removed sorts before the last added taken.
    if (j > 0 && i < r.count && r.rowIndex[i]! <= a.rowIndex[j - 1]!) lo = i + 1;
    else hi = i;
  }
  let i = lo;
  let j = from - lo;
  const out: Pick[] = [];
  const take = (refs: RowRefs, k: number, type: Pick["type"]) =>
    out.push({ type, rowIndex: refs.rowIndex[k]!, offset: refs.offset[k]!, length: refs.length[k]! });
  while (out.length < limit && (i < r.count || j < a.count)) {
    if (j >= a.count || (i < r.count && r.rowIndex[i]! <= a.rowIndex[j]!)) take(r, i++, "removed");
    else take(a, j++, "added");
  }
  return out;
}

async function readRecord(ctx: ServiceContext, key: string, offset: number, length: number): Promise<Record<string, unknown>> {
  const stream = await ctx.storage.get(key, { range: { start: offset, end: offset + length - 1 } });
  if (!stream) throw new AppError("conflict", "a processed file changed while its delta was read; ask again");
  return JSON.parse(await new Response(stream).text()) as Record<string, unknown>;
}

async function mapLimited<T, U>(items: T[], limit: number, fn: (t: T) => Promise<U>): Promise<U[]> {
  const out = new Array<U>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const k = next++;
      out[k] = await fn(items[k]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Paging through a delta asks for the same pair again and again: the diff
 * (row references only, 16 bytes a changed row) is kept for the last few
 * pairs, keyed by the processed files, which never change once written.
 * Concurrent requests for one pair share one computation.
 */
const CACHE_ENTRIES = 8;
const caches = new WeakMap<ServiceContext, Map<string, Promise<MultisetDiff>>>();

function cachedDiff(ctx: ServiceContext, base: RunFile, compare: RunFile, baseKey: string, compareKey: string): Promise<MultisetDiff> {
  let cache = caches.get(ctx);
  if (!cache) caches.set(ctx, (cache = new Map()));
  const id = [baseKey, base.processedAt?.getTime(), compareKey, compare.processedAt?.getTime()].join("|");
  const hit = cache.get(id);
  if (hit) {
    cache.delete(id);
    cache.set(id, hit);
    return hit;
  }
  const work = computeDiff(ctx, base, compare, baseKey, compareKey);
  cache.set(id, work);
  work.catch(() => cache.delete(id));
  while (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  return work;
}

async function computeDiff(ctx: ServiceContext, base: RunFile, compare: RunFile, baseKey: string, compareKey: string): Promise<MultisetDiff> {
  const [b, c] = await Promise.all([ctx.storage.get(baseKey), ctx.storage.get(compareKey)]);
  if (!b || !c) {
    await Promise.all([b?.cancel(), c?.cancel()]);
    const gone = !b ? base.id : compare.id;
    throw new AppError("not_found", `the processed file of pipeline run '${gone}' is no longer stored`);
  }
  return multisetDiff({ base: b, compare: c, expectedRows: (await expectedRows(ctx, base, baseKey)) + (await expectedRows(ctx, compare, compareKey)) });
}

/** Rows the engine reported writing; else a guess from the size (rows of 48 bytes or more). */
async function expectedRows(ctx: ServiceContext, run: RunFile, key: string): Promise<number> {
  const rows = run.metadata?.output?.rows;
  if (typeof rows === "number" && rows >= 0) return rows;
  const info = await ctx.storage.stat(key);
  return Math.ceil((info?.size ?? 0) / 48);
}
