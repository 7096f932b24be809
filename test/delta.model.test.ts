import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { pageOf } from "../src/services/delta/get-run-delta";
import { multisetDiff } from "../src/services/delta/multiset-diff";
import { chunkedStream, processedJson } from "./helpers/fixture-runs";

/** The engine's layout, delivered in chunks of the given size (rows get cut anywhere). */
const stream = (rows: object[], chunk: number) => chunkedStream(processedJson(rows), chunk);

/** The obvious multiset difference: the first min(a, b) equal rows of each side match. */
function naive(base: object[], compare: object[]) {
  const text = (r: object) => JSON.stringify(r);
  const left = new Map<string, number>();
  for (const r of compare) left.set(text(r), (left.get(text(r)) ?? 0) + 1);
  const removed: number[] = [];
  base.forEach((r, i) => {
    const n = left.get(text(r)) ?? 0;
    if (n > 0) left.set(text(r), n - 1);
    else removed.push(i);
  });
  const inBase = new Map<string, number>();
  for (const r of base) inBase.set(text(r), (inBase.get(text(r)) ?? 0) + 1);
  const added: number[] = [];
  compare.forEach((r, i) => {
    const n = inBase.get(text(r)) ?? 0;
    if (n > 0) inBase.set(text(r), n - 1);
    else added.push(i);
  });
  return { removed, added, unchanged: base.length - removed.length };
}

const row = fc.record({ k: fc.integer({ min: 0, max: 6 }), s: fc.constantFrom("a", "b", "é", "日本", 'q"x') }, { requiredKeys: ["k"] });
const rows = fc.array(row, { maxLength: 40 });

describe("multisetDiff against the obvious model", () => {
  test("in memory and partitioned to temporary files alike, whatever the chunking", async () => {
    await fc.assert(
      fc.asyncProperty(rows, rows, fc.integer({ min: 1, max: 64 }), fc.constantFrom(1 << 18, 4, 1), async (base, compare, chunk, per) => {
        const d = await multisetDiff({ base: stream(base, chunk), compare: stream(compare, chunk + 3), expectedRows: base.length + compare.length, rowsPerPartition: per });
        const want = naive(base, compare);
        expect({ baseCount: d.baseCount, compareCount: d.compareCount, unchanged: d.unchanged }).toEqual({
          baseCount: base.length,
          compareCount: compare.length,
          unchanged: want.unchanged,
        });
        expect([...d.removed.rowIndex]).toEqual(want.removed);
        expect([...d.added.rowIndex]).toEqual(want.added);
        // Offsets and lengths point at the rows' bytes.
        const file = new TextEncoder().encode(processedJson(compare));
        d.added.rowIndex.forEach((r, k) => {
          const bytes = file.subarray(d.added.offset[k]!, d.added.offset[k]! + d.added.length[k]!);
          expect(JSON.parse(new TextDecoder().decode(bytes))).toEqual(compare[r]!);
        });
      }),
      { numRuns: 150 },
    );
  });
});

describe("pageOf", () => {
  test("a page is that slice of the merge by rowIndex, removed first on a tie", () => {
    const sortedSet = fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { maxLength: 20 }).map((a) => a.sort((x, y) => x - y));
    fc.assert(
      fc.property(sortedSet, sortedSet, fc.integer({ min: 0, max: 45 }), fc.integer({ min: 1, max: 10 }), (removed, added, from, limit) => {
        const refs = (a: number[]) => ({ count: a.length, rowIndex: Uint32Array.from(a), offset: Float64Array.from(a), length: Uint32Array.from(a) });
        const diff = { baseCount: 0, compareCount: 0, unchanged: 0, removed: refs(removed), added: refs(added) };
        const merged = [...removed.map((r) => ["removed", r] as const), ...added.map((r) => ["added", r] as const)].sort(
          (x, y) => x[1] - y[1] || (x[0] === "removed" ? -1 : 1),
        );
        expect(pageOf(diff, from, limit).map((c) => [c.type, c.rowIndex])).toEqual(merged.slice(from, from + limit).map((x) => [...x]));
      }),
      { numRuns: 500 },
    );
  });
});
