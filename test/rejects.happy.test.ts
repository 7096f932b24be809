import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { fetchLink } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEM_MAPPINGS, runToEnd } from "./helpers/runs";

/**
 * Rejected rows through the whole service: a real upload processed by the
 * engine under `skip` and `quarantine`, the counts in the run's metadata,
 * the rejects link on REST, GraphQL and tRPC (same answer, same refusal),
 * and input rows named alike in row errors, rejects and search hits.
 */

// biome-ignore lint/suspicious/noExplicitAny: replies are compared whole
type Any = any;

let h: Harness;
let ws: TestWorkspace;
let quarantined: Any;
let skipped: Any;
let clean: Any;

// Input rows 3 (Qty "x") and 7 (no SKU) are invalid; the header is not a row.
const CSV = ["SKU,Qty,Name", "a-1,1,One", "b-2,2,Two", "c-3,x,Three", "d-4,4,Four", "e-5,5,Five", "f-6,6,Six", ",7,Seven", "h-8,8,Eight"].join("\n") + "\n";

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  const q = await createPipeline(h, ws, { mappings: { ...ITEM_MAPPINGS, validations: { onInvalidRow: "quarantine" } } });
  quarantined = await runToEnd(h, ws, q.pipeline.id, CSV, "items.csv");
  const s = await createPipeline(h, ws, { mappings: { ...ITEM_MAPPINGS, validations: { onInvalidRow: "skip" } } });
  skipped = await runToEnd(h, ws, s.pipeline.id, CSV, "week 12.csv");
  clean = await runToEnd(h, ws, q.pipeline.id);
});
afterAll(() => h.close());

const fetchRejects = async (runId: string) => {
  const link = await h.ok(ws, "GET", `/files/pipeline-runs/${runId}/rejects`);
  const res = await fetchLink(h, link.url);
  expect(res.status).toBe(200);
  return { link, rows: JSON.parse(await res.text()) as Any[] };
};

describe("counts", () => {
  test("each row is counted once: total = valid + skipped + quarantined", () => {
    expect(quarantined.status).toBe("completed");
    expect(quarantined.metadata.rows).toEqual({ total: 8, valid: 6, invalid: 2, skipped: 0, quarantined: 2 });
    expect(skipped.metadata.rows).toEqual({ total: 8, valid: 6, invalid: 2, skipped: 2, quarantined: 0 });
    expect(quarantined.metadata.rejects.rows).toBe(2);
  });

  test("row errors name the input row, 1-based over the data rows", () => {
    expect(quarantined.metadata.errors.map((e: Any) => [e.inputRow, e.field])).toEqual([
      [3, "qty"],
      [7, "sku"],
    ]);
    expect(quarantined.metadata.errors[0]).not.toHaveProperty("rowIndex");
  });
});

describe("the rejects link", () => {
  test("REST: a presigned link to the rows as read, each with its input row, outcome and errors", async () => {
    const { link, rows } = await fetchRejects(quarantined.id);
    expect(link).toMatchObject({ filename: "items.rejects.json", mimetype: "application/json" });
    expect(rows).toEqual([
      { inputRow: 3, outcome: "quarantined", errors: [{ field: "qty", message: expect.stringContaining("transform 'integer'") }], row: { SKU: "c-3", Qty: "x", Name: "Three" } },
      { inputRow: 7, outcome: "quarantined", errors: [{ field: "sku", message: "is required" }], row: { SKU: "", Qty: "7", Name: "Seven" } },
    ]);
  });

  test("skipped rows are listed too, as skipped", async () => {
    const { link, rows } = await fetchRejects(skipped.id);
    expect(link.filename).toBe("week 12.rejects.json");
    expect(rows.map((r) => [r.inputRow, r.outcome])).toEqual([
      [3, "skipped"],
      [7, "skipped"],
    ]);
  });

  test("GraphQL and tRPC give REST's link (the signature aside)", async () => {
    const rest = await h.ok(ws, "GET", `/files/pipeline-runs/${quarantined.id}/rejects`);
    const g = await h.graphql(ws.apiKey, `query($id: ID!) { runFileLink(id: $id, which: rejects) { url filename expiresIn mimetype } }`, { id: quarantined.id });
    expect(g.body.errors).toBeUndefined();
    const t = await h.trpc(ws).files.link({ id: quarantined.id, which: "rejects" });
    const path = (l: Any) => ({ ...l, url: new URL(l.url).pathname });
    expect(path(g.body.data.runFileLink)).toEqual(path(rest));
    expect(path(t)).toEqual(path(rest));
    expect(JSON.parse(await (await fetchLink(h, t.url)).text())).toHaveLength(2);
  });

  test("a run without rejected rows is a 404 saying why, alike on every surface", async () => {
    const rest = await h.api(ws, "GET", `/files/pipeline-runs/${clean.id}/rejects`);
    expect(rest.status).toBe(404);
    expect(rest.body.message).toBe(`pipeline run '${clean.id}' has no rejected rows: no row was skipped or quarantined`);
    const g = await h.graphql(ws.apiKey, `query($id: ID!) { runFileLink(id: $id, which: rejects) { url } }`, { id: clean.id });
    expect(g.body.errors![0]!.message).toBe(rest.body.message);
    expect(g.body.errors![0]!.extensions.statusCode).toBe(404);
    const t = await h
      .trpc(ws)
      .files.link({ id: clean.id, which: "rejects" })
      .catch((e) => e);
    expect(t).toBeInstanceOf(TRPCError);
    expect(t.code).toBe("NOT_FOUND");
    expect(t.message).toBe(rest.body.message);
  });
});

describe("search hits name both rows", () => {
  test("rowIndex is the position in the processed file, inputRow the row in the received file", async () => {
    const res = await h.ok(ws, "POST", "/files/search", { pipelineRunIds: [quarantined.id, skipped.id], searchTerm: "e" });
    // Processed rows: a-1 b-2 d-4 e-5 f-6 h-8 (input rows 1 2 4 5 6 8). "e" is in One, Three(rejected), Five, Seven(rejected), Eight, e-5.
    const hits = res.results.filter((r: Any) => r.pipelineRunId === quarantined.id).map((r: Any) => [r.rowData.sku, r.rowIndex, r.inputRow]);
    expect(hits).toEqual([
      ["A-1", 0, 1],
      ["E-5", 3, 5],
      ["H-8", 5, 8],
    ]);
    const s = res.results.filter((r: Any) => r.pipelineRunId === skipped.id).map((r: Any) => [r.rowIndex, r.inputRow]);
    expect(s).toEqual([
      [0, 1],
      [3, 5],
      [5, 8],
    ]);
    const g = await h.graphql(ws.apiKey, `query($i: SearchFilesInput!) { searchFiles(input: $i) { results { rowIndex inputRow } } }`, {
      i: { pipelineRunIds: [quarantined.id], searchTerm: "h-8" },
    });
    expect(g.body.data.searchFiles.results).toEqual([{ rowIndex: 5, inputRow: 8 }]);
  });
});
