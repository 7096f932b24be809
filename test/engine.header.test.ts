import { afterAll, describe, expect, test } from "bun:test";
import ExcelJS from "exceljs";
import { closestColumns, editDistance, normalizeName, planHeader } from "../src/engine/header";
import { processFile } from "../src/engine/process";
import type { SchemaRef } from "../src/engine/types";
import { jsonLines, localStore, request } from "./helpers/engine";
import { excelOrder } from "./helpers/xlsx";

/** The header diagnosis (headerMatch, missingColumns) and emptyCells, through processFile on one worker. */

const t = localStore();
afterAll(() => t.close());

const ITEMS: SchemaRef = {
  id: "sch_items",
  version: "1",
  definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" }, name: { type: "string" } }, required: ["sku", "qty"] },
};
const MAPPINGS = [
  { source: "SKU", target: "sku" },
  { source: "Qty", target: "qty", transform: "integer" },
  { source: "Name", target: "name" },
];

async function run(body: string | Uint8Array, options: Record<string, unknown> = {}, fieldMappings: unknown[] = MAPPINGS, schema = ITEMS, filename = "items.csv") {
  const req = request(t, filename, { fieldMappings, options, validations: { onInvalidRow: "skip" } }, schema);
  await t.store.put(req.originalKey, body);
  const outcome = await processFile(req, t.store);
  return { outcome, rows: outcome.ok ? jsonLines((await t.text(req.processedKey))!) : null };
}

describe("names and distances", () => {
  test("normalized names ignore case, spaces and punctuation; closest columns by normalization, edit distance or abbreviation", () => {
    expect(normalizeName(" Order-ID ")).toBe("orderid");
    expect(normalizeName("Straße_Nr.")).toBe("straßenr");
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(closestColumns("Qty", ["SKU", "Quantity", "Name"])).toEqual(["Quantity"]);
    expect(closestColumns("order_id", ["Order ID", "Order", "Customer"])).toEqual(["Order ID", "Order"]);
    expect(closestColumns("Price", ["Prices", "Prize", "Weight"])).toEqual(["Prices", "Prize"]);
    expect(closestColumns("zip", ["Name", "City"])).toEqual([]);
  });
});

describe("a mapped column missing from the header", () => {
  test("fails the run before any row, naming each missing column and the closest header names", async () => {
    const { outcome } = await run("SKU,Quantity,Name\na-1,3,Bolt\nb-2,4,Nut\n");
    expect(outcome.ok).toBe(false);
    expect(outcome.counts.total).toBe(0);
    expect(outcome.errorMessage).toBe(
      "The file's header does not fit the mapping, so no row was read: `Qty` not in the header; closest: `Quantity`. The header is `SKU`, `Quantity`, `Name`. " +
        "Rename the column in the file or the mapping's source, set mappings.options.headerMatch to 'case-insensitive' or 'normalized', or set mappings.options.missingColumns to 'proceed' to read the file without it.",
    );
  });

  test("several missing columns are all named; a header-only file is checked too", async () => {
    const { outcome } = await run("Item,Amount\n", {}, MAPPINGS);
    expect(outcome.errorMessage).toContain("`SKU` not in the header; no column is close; `Qty` not in the header; no column is close; `Name` not in the header; no column is close.");
  });

  test("missingColumns 'proceed': read without it, the rows then judged by the schema, and the summary says what was missing and unused", async () => {
    const { outcome, rows } = await run("SKU,Quantity,Name\na-1,3,Bolt\n", { missingColumns: "proceed" });
    expect(outcome.ok).toBe(true);
    expect(outcome.counts).toMatchObject({ total: 1, valid: 0, skipped: 1 });
    expect(outcome.errors[0]).toEqual({ inputRow: 1, field: "qty", message: "is required" });
    expect(outcome.input!.header).toEqual({ unusedColumns: ["Quantity"], missingColumns: ["Qty"] });
    expect(rows).toEqual([]);
  });

  test("with no fieldMappings only the schema's required properties must be in the header", async () => {
    const ok = await run("sku,qty,colour\na-1,3,red\n", {}, []);
    expect(ok.outcome.ok).toBe(true);
    expect(ok.outcome.input!.header).toEqual({ unusedColumns: ["colour"] });
    const missing = await run("sku,name\na-1,Bolt\n", {}, []);
    expect(missing.outcome.errorMessage).toContain("`qty` not in the header");
  });

  test("an XLSX sheet's header row is checked the same way", async () => {
    const wb = new ExcelJS.Workbook();
    const sheet = wb.addWorksheet("Items");
    sheet.addRow(["SKU", "Quantity", "Name"]);
    sheet.addRow(["a-1", 3, "Bolt"]);
    const book = await excelOrder(new Uint8Array((await wb.xlsx.writeBuffer()) as ArrayBuffer));
    const refused = await run(book, {}, MAPPINGS, ITEMS, "items.xlsx");
    expect(refused.outcome.errorMessage).toContain("`Qty` not in the header; closest: `Quantity`");
    const read = await run(book, { headerMatch: "normalized" }, [{ source: "sku", target: "sku" }, { source: "QUANTITY", target: "qty" }], ITEMS, "items.xlsx");
    expect(read.rows).toEqual([{ sku: "a-1", qty: 3 }]);
    expect(read.outcome.input!.header).toEqual({ unusedColumns: ["Name"], matchedColumns: { sku: "SKU", QUANTITY: "Quantity" } });
  });

  test("JSON records have no header: nothing is checked", async () => {
    const { outcome } = await run('[{"SKU":"a-1","Qty":"3"}]', {}, MAPPINGS, ITEMS, "items.json");
    expect(outcome.ok).toBe(true);
    expect(outcome.input!.header).toBeUndefined();
  });
});

describe("headerMatch", () => {
  test("exact (the default) only takes the same spelling", async () => {
    const { outcome } = await run("sku,qty,name\na-1,3,Bolt\n");
    expect(outcome.errorMessage).toContain("`SKU` not in the header; closest: `sku`");
  });

  test("case-insensitive and normalized find the column under another spelling, and say which", async () => {
    const ci = await run("sku,QTY,name,colour\na-1,3,Bolt,red\n", { headerMatch: "case-insensitive" });
    expect(ci.rows).toEqual([{ sku: "a-1", qty: 3, name: "Bolt" }]);
    expect(ci.outcome.input!.header).toEqual({ unusedColumns: ["colour"], matchedColumns: { SKU: "sku", Qty: "QTY", Name: "name" } });
    const spaced = await run("sku,qty,name\na-1,3,Bolt\n", { headerMatch: "normalized" }, [{ source: "S.K.U.", target: "sku" }, { source: "q ty", target: "qty" }]);
    expect(spaced.rows).toEqual([{ sku: "a-1", qty: 3 }]);
    expect(spaced.outcome.input!.header!.unusedColumns).toEqual(["name"]);
    // Case-insensitive does not ignore punctuation.
    expect((await run("s_k_u,qty,name\na,1,b\n", { headerMatch: "case-insensitive" })).outcome.errorMessage).toContain("`SKU` not in the header; closest: `s_k_u`");
  });

  test("a source matching two header columns is refused, naming both; an exact spelling wins over others", async () => {
    const two = await run("Qty,QTY,SKU,Name\n1,2,a,b\n", { headerMatch: "case-insensitive" }, [{ source: "qty", target: "qty" }, { source: "SKU", target: "sku" }]);
    expect(two.outcome.errorMessage).toContain("`qty` matches 2 header columns (`Qty`, `QTY`) under headerMatch 'case-insensitive'");
    const exactWins = await run("Qty,QTY,SKU,Name\n1,2,a,b\n", { headerMatch: "case-insensitive" });
    expect(exactWins.rows).toEqual([{ sku: "a", qty: 1, name: "b" }]);
  });

  test("an aggregated mapping's sources are resolved and checked too", () => {
    const plan = planHeader({ fieldMappings: [{ target: "full", sources: ["First Name", "last"] }], schemaProperties: [], required: [], columns: ["first_name", "Last"], headerMatch: "normalized" });
    expect(plan.problem).toBeNull();
    expect(plan.fieldMappings).toEqual([{ target: "full", sources: ["first_name", "Last"] }]);
  });
});

describe("emptyCells", () => {
  const body = "SKU,Qty,Name\na-1,3,\nb-2,,Nut\n";
  const loose: SchemaRef = { id: "sch_loose_items", version: "1", definition: { type: "object", properties: { sku: { type: "string" }, qty: { type: ["integer", "null"] }, name: { type: ["string", "null"] } } } };

  test("absent (the default): an empty cell is left out, so required catches it", async () => {
    const { outcome, rows } = await run(body);
    expect(rows).toEqual([{ sku: "a-1", qty: 3 }]);
    expect(outcome.errors).toEqual([{ inputRow: 2, field: "qty", message: "is required" }]);
  });

  test("empty-string: the empty string is written (a transform does not run on it), so `required` passes and the type decides", async () => {
    const { outcome, rows } = await run(body, { emptyCells: "empty-string" });
    expect(rows).toEqual([{ sku: "a-1", qty: 3, name: "" }]);
    expect(outcome.errors).toMatchObject([{ inputRow: 2, field: "qty", message: expect.stringContaining("must be integer") }]);
    // Where the schema allows null, ajv's coercion turns "" into null.
    expect((await run(body, { emptyCells: "empty-string" }, MAPPINGS, loose)).rows).toEqual([
      { sku: "a-1", qty: 3, name: "" },
      { sku: "b-2", qty: null, name: "Nut" },
    ]);
  });

  test("null: null is written; with required it passes `required`, and the type decides", async () => {
    const { rows } = await run(body, { emptyCells: "null" }, MAPPINGS, loose);
    expect(rows).toEqual([
      { sku: "a-1", qty: 3, name: null },
      { sku: "b-2", qty: null, name: "Nut" },
    ]);
    const strict = await run(body, { emptyCells: "null" });
    // `qty: {type: integer}` with ajv's coercion turns null into 0: a schema that means "no value" says ["integer", "null"].
    expect(strict.rows).toEqual([
      { sku: "a-1", qty: 3, name: "" },
      { sku: "b-2", qty: 0, name: "Nut" },
    ]);
  });

  test("a transform whose result is empty follows the same rule", async () => {
    const { rows } = await run("SKU,Qty,Name\na-1,3,   \n", { emptyCells: "null" }, [...MAPPINGS.slice(0, 2), { source: "Name", target: "name", transform: "trim" }], loose);
    expect(rows).toEqual([{ sku: "a-1", qty: 3, name: null }]);
  });
});

