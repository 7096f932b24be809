import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEM_MAPPINGS, runToEnd } from "./helpers/runs";

/**
 * The header diagnosis and emptyCells through the service: a partner's
 * renamed column fails the run with a message naming it, the mapping
 * options change that, and what the header held is in the run's metadata.
 */

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely
type Any = any;

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});
afterAll(() => h.close());

const processedRows = async (run: Any) => {
  const res = await h.api(ws, "GET", `/files/json?pipelineRunId=${run.id}`);
  expect(res.status).toBe(200);
  return res.body;
};

describe("a mapped column missing from the header", () => {
  test("the run fails before any row, naming the column and the closest header name", async () => {
    const p = await createPipeline(h, ws);
    const run = await runToEnd(h, ws, p.pipeline.id, "SKU,Quantity,Name\na-1,3,Bolt\nb-2,4,Nut\n", "renamed.csv");
    expect(run.status).toBe("failed");
    expect(run.errorMessage).toStartWith("The file's header does not fit the mapping, so no row was read: `Qty` not in the header; closest: `Quantity`.");
    expect(run.metadata.rows).toEqual({ total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 });
  });

  test("missingColumns 'proceed' reads the file; the metadata lists the missing and unused columns", async () => {
    const p = await createPipeline(h, ws, { mappings: { ...ITEM_MAPPINGS, options: { missingColumns: "proceed" }, validations: { onInvalidRow: "skip" } } });
    const run = await runToEnd(h, ws, p.pipeline.id, "SKU,Quantity,Name\na-1,3,Bolt\n", "renamed.csv");
    expect(run.status).toBe("completed");
    expect(run.metadata.input.header).toEqual({ unusedColumns: ["Quantity"], missingColumns: ["Qty"] });
    expect(run.metadata.errors).toEqual([{ inputRow: 1, field: "qty", message: "is required" }]);
  });

  test("headerMatch set by PATCH: a header in other case is read, and the metadata says which column each source matched", async () => {
    const p = await createPipeline(h, ws);
    const csv = "sku,QTY,name,Colour\na-1,3,Bolt,red\n";
    expect((await runToEnd(h, ws, p.pipeline.id, csv, "lower.csv")).status).toBe("failed");
    const patched = await h.ok(ws, "PATCH", `/pipelines/${p.pipeline.id}`, { mappings: { options: { headerMatch: "case-insensitive" } } });
    expect(patched.mappings.options).toEqual({ headerMatch: "case-insensitive" });
    const run = await runToEnd(h, ws, p.pipeline.id, csv, "lower.csv");
    expect(run.status).toBe("completed");
    expect(run.metadata.input.header).toEqual({ unusedColumns: ["Colour"], matchedColumns: { SKU: "sku", Qty: "QTY", Name: "name" } });
    expect(await processedRows(run)).toEqual([{ sku: "A-1", qty: 3, name: "Bolt" }]);
  });
});

describe("emptyCells", () => {
  const definition = { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" }, name: { type: ["string", "null"] } }, required: ["sku", "qty"] };
  const csv = "SKU,Qty,Name\na-1,3,\nb-2,4,  \n";

  test("absent by default: an empty cell is left out of the row", async () => {
    const p = await createPipeline(h, ws, { definition });
    expect(await processedRows(await runToEnd(h, ws, p.pipeline.id, csv))).toEqual([
      { sku: "A-1", qty: 3 },
      { sku: "B-2", qty: 4 },
    ]);
  });

  test("null: written as null, also where a transform's result is empty", async () => {
    const p = await createPipeline(h, ws, { definition, mappings: { ...ITEM_MAPPINGS, options: { emptyCells: "null" } } });
    expect(await processedRows(await runToEnd(h, ws, p.pipeline.id, csv))).toEqual([
      { sku: "A-1", qty: 3, name: null },
      { sku: "B-2", qty: 4, name: null },
    ]);
  });

  test("empty-string: written as the empty string", async () => {
    const p = await createPipeline(h, ws, { definition, mappings: { ...ITEM_MAPPINGS, options: { emptyCells: "empty-string" } } });
    expect(await processedRows(await runToEnd(h, ws, p.pipeline.id, csv))).toEqual([
      { sku: "A-1", qty: 3, name: "" },
      { sku: "B-2", qty: 4, name: "" },
    ]);
  });
});
