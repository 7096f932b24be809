import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FixturePipeline, fixturePipeline, fixtureRun } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, runToEnd } from "./helpers/runs";

let h: Harness;
let ws: TestWorkspace;
let p: FixturePipeline;
let baseId: string;
let compareId: string;

const BASE = [
  { id: 1, v: "a" },
  { id: 2, v: "b" },
  { id: 3, v: "c" },
  { id: 4, v: "d" },
  { id: 4, v: "d" },
  { id: 5, v: "e" },
];
const COMPARE = [
  { id: 1, v: "a" },
  { id: 3, v: "C" },
  { id: 4, v: "d" },
  { id: 5, v: "e" },
  { id: 6, v: "f" },
];

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  p = await fixturePipeline(h, ws);
  baseId = (await fixtureRun(h, ws, p, { rows: BASE })).id;
  compareId = (await fixtureRun(h, ws, p, { rows: COMPARE })).id;
});
afterAll(() => h.close());

const delta = (qs: string) => h.ok(ws, "GET", `/pipeline-runs/delta?${qs}`);

describe("GET /pipeline-runs/delta", () => {
  test("summary and changes: a changed row is one removed plus one added; duplicates count as a multiset", async () => {
    const d = await delta(`baseRunId=${baseId}&compareRunId=${compareId}`);
    expect(d).toEqual({
      baseRunId: baseId,
      compareRunId: compareId,
      pipelineId: p.id,
      summary: { baseCount: 6, compareCount: 5, added: 2, removed: 3, unchanged: 3 },
      changes: [
        { type: "removed", rowIndex: 1, record: { id: 2, v: "b" } },
        { type: "added", rowIndex: 1, record: { id: 3, v: "C" } },
        { type: "removed", rowIndex: 2, record: { id: 3, v: "c" } },
        { type: "removed", rowIndex: 4, record: { id: 4, v: "d" } },
        { type: "added", rowIndex: 4, record: { id: 6, v: "f" } },
      ],
      pagination: { page: 1, limit: 20, total: 5, totalPages: 1 },
    });
  });

  test("changes are paged", async () => {
    const pages = await Promise.all([1, 2, 3, 4].map((page) => delta(`baseRunId=${baseId}&compareRunId=${compareId}&page=${page}&limit=2`)));
    expect(pages.map((d) => d.changes.map((c: any) => `${c.type}:${c.rowIndex}`))).toEqual([
      ["removed:1", "added:1"],
      ["removed:2", "removed:4"],
      ["added:4"],
      [],
    ]);
    for (const d of pages) expect(d.pagination).toMatchObject({ limit: 2, total: 5, totalPages: 3 });
    expect(pages[3]!.summary.added).toBe(2);
  });

  test("the other way round, added and removed swap", async () => {
    const d = await delta(`baseRunId=${compareId}&compareRunId=${baseId}`);
    expect(d.summary).toEqual({ baseCount: 5, compareCount: 6, added: 3, removed: 2, unchanged: 3 });
    expect(d.changes.map((c: any) => `${c.type}:${c.rowIndex}`)).toEqual(["removed:1", "added:1", "added:2", "removed:4", "added:4"]);
  });

  test("a run against itself, and empty runs", async () => {
    const same = await delta(`baseRunId=${baseId}&compareRunId=${baseId}`);
    expect(same.summary).toEqual({ baseCount: 6, compareCount: 6, added: 0, removed: 0, unchanged: 6 });
    expect(same.changes).toEqual([]);
    expect(same.pagination).toEqual({ page: 1, limit: 20, total: 0, totalPages: 0 });
    const empty = (await fixtureRun(h, ws, p, { rows: [] })).id;
    const fromEmpty = await delta(`baseRunId=${empty}&compareRunId=${compareId}`);
    expect(fromEmpty.summary).toEqual({ baseCount: 0, compareCount: 5, added: 5, removed: 0, unchanged: 0 });
    expect(fromEmpty.changes.map((c: any) => c.record)).toEqual(COMPARE);
  });

  test("records with non-ASCII text and long rows are read back whole", async () => {
    const a = [{ name: "Straße", note: "x".repeat(100_000) }, { name: "日本語" }];
    const b = [{ name: "Strasse", note: "x".repeat(100_000) }, { name: "日本語" }];
    const base = (await fixtureRun(h, ws, p, { rows: a })).id;
    const compare = (await fixtureRun(h, ws, p, { rows: b })).id;
    const d = await delta(`baseRunId=${base}&compareRunId=${compare}`);
    expect(d.summary).toMatchObject({ added: 1, removed: 1, unchanged: 1 });
    expect(d.changes).toEqual([
      { type: "removed", rowIndex: 0, record: a[0] },
      { type: "added", rowIndex: 0, record: b[0] },
    ]);
  });

  test("is not taken for a run id by GET /pipeline-runs/:id", async () => {
    const res = await h.api(ws, "GET", "/pipeline-runs/delta");
    expect(res.status).toBe(400);
    expect(res.body.message).toContain("baseRunId: is required");
    const run = await h.ok(ws, "GET", `/pipeline-runs/${baseId}`);
    expect(run.id).toBe(baseId);
  });

  test("two runs uploaded and processed by one pipeline", async () => {
    const real = await createPipeline(h, ws);
    const first = await runToEnd(h, ws, real.pipeline.id, "SKU,Qty,Name\na-1,3,Bolt\nb-2,10,Nut\nc-3,7,Washer\n", "monday.csv");
    const second = await runToEnd(h, ws, real.pipeline.id, "SKU,Qty,Name\na-1,3,Bolt\nb-2,11,Nut\nc-3,7,Washer\nd-4,1,Pin\n", "tuesday.csv");
    expect([first.status, second.status]).toEqual(["completed", "completed"]);
    const d = await delta(`baseRunId=${first.id}&compareRunId=${second.id}`);
    expect(d.pipelineId).toBe(real.pipeline.id);
    expect(d.summary).toEqual({ baseCount: 3, compareCount: 4, added: 2, removed: 1, unchanged: 2 });
    expect(d.changes).toEqual([
      { type: "removed", rowIndex: 1, record: { sku: "B-2", qty: 10, name: "Nut" } },
      { type: "added", rowIndex: 1, record: { sku: "B-2", qty: 11, name: "Nut" } },
      { type: "added", rowIndex: 3, record: { sku: "D-4", qty: 1, name: "Pin" } },
    ]);
  });
});
