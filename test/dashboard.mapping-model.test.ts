import { describe, expect, test } from "bun:test";
import { autoPair, type EditorOptions, type Mappings, normalized, optionsFrom, rowsFrom, targetsOf, toMappings } from "../web/pages/mapping-model";

/**
 * The mapping editor's model (web/pages/mapping-model.ts): auto-pairing by
 * exact then normalized names, and the round trip between a pipeline's
 * mappings and the editor's rows and options, keeping what the page does
 * not show.
 */
const SCHEMA = { type: "object", properties: { order_id: { type: "string" }, sku: { type: "string" }, qty: { type: "integer" }, Name: { type: "string" } }, required: ["sku"] };

describe("auto-pairing", () => {
  const rows = () => rowsFrom(targetsOf(SCHEMA).map((t) => t.name), undefined);

  test("exact names first, then names equal without case, spaces and punctuation; each column once", () => {
    const paired = autoPair(rows(), ["Order ID", "SKU", "sku", "Quantity", "name"]);
    const by = Object.fromEntries(paired.map((r) => [r.target, r.mode === "column" ? r.source : null]));
    // "sku" matches exactly although "SKU" comes first; "Order ID" matches order_id when normalized; nothing is "qty".
    expect(by).toEqual({ order_id: "Order ID", sku: "sku", qty: null, Name: "name" });
  });

  test("a column already used, or a target the person chose for, is left alone", () => {
    const chosen = rows().map((r) => (r.target === "Name" ? { ...r, mode: "static" as const, value: "n/a", touched: true } : r));
    const paired = autoPair(chosen, ["name", "SKU"]);
    expect(paired.find((r) => r.target === "Name")).toMatchObject({ mode: "static", value: "n/a" });
    expect(paired.find((r) => r.target === "sku")).toMatchObject({ mode: "column", source: "SKU" });
    const twice = autoPair(autoPair(rows(), ["SKU"]), ["SKU", "sku"]);
    expect(twice.filter((r) => r.mode === "column").map((r) => r.source)).toEqual(["SKU"]);
  });

  test("normalized names", () => {
    expect(normalized("Order ID")).toBe(normalized("order_id"));
    expect(normalized("orderId")).toBe("orderid");
    expect(normalized("Straße-Nr.")).toBe("straßenr");
  });
});

describe("mappings to rows and back", () => {
  const saved: Mappings = {
    fieldMappings: [
      { target: "sku", source: "SKU", transform: "uppercase" },
      { target: "qty", value: "1" },
      { target: "label", sources: ["SKU", "Name"], delimiter: " / " },
      { target: "legacy", source: "Old" },
    ],
    options: { delimiter: ";", headerMatch: "normalized", sheet: "Orders" },
    validations: { onInvalidRow: "skip", maxInvalidRows: 5 },
  } as Mappings;

  test("every saved form comes back unchanged, targets the schema lacks included, unknown members kept", () => {
    const rows = rowsFrom(["sku", "qty", "label"], saved);
    expect(rows.map((r) => [r.target, r.mode])).toEqual([
      ["sku", "column"],
      ["qty", "static"],
      ["label", "aggregated"],
      ["legacy", "column"],
    ]);
    const back = toMappings(rows, optionsFrom(saved), saved);
    expect(back).toEqual(saved);
  });

  test("options left empty are dropped; header row off is written; onInvalidRow cleared goes", () => {
    const opts: EditorOptions = { ...optionsFrom(saved), delimiter: "", sheet: "", headerRow: false, onInvalidRow: "", outputFormat: "csv" };
    const back = toMappings(rowsFrom([], saved), opts, saved);
    expect(back.options).toEqual({ headerMatch: "normalized", headerRow: false, outputFormat: "csv" });
    expect(back.validations).toEqual({ maxInvalidRows: 5 });
  });

  test("a target not mapped, or mapped to no column yet, is left out", () => {
    const rows = rowsFrom(["sku", "qty"], undefined).map((r) => (r.target === "qty" ? { ...r, mode: "column" as const, source: "" } : r));
    expect(toMappings(rows, optionsFrom(undefined), undefined).fieldMappings).toEqual([]);
  });

  test("schema targets: names, required, type and format", () => {
    expect(targetsOf({ properties: { d: { type: "string", format: "date" }, n: {} }, required: ["d"] })).toEqual([
      { name: "d", required: true, type: "string, date" },
      { name: "n", required: false, type: "" },
    ]);
    expect(targetsOf(null)).toEqual([]);
  });
});
