import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import ExcelJS from "exceljs";
import { ColumnStats, draftSchema, targetName } from "../src/services/schemas/infer";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline } from "./helpers/runs";
import { postSample } from "./helpers/sample";
import { excelOrder } from "./helpers/xlsx";

/**
 * POST /schemas/infer: a draft JSON Schema, a suggested fieldMappings and
 * the evidence per column from a sample; nothing stored. The draft is
 * accepted by POST /schemas and the sample validates against it.
 */

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});

afterAll(async () => {
  await h.close();
});

const statuses = ["open", "closed", "held"];
const SAMPLE =
  "Order ID,Amount,Paid,Order Date,Shipped At,Email,Website,Status,Note\n" +
  Array.from({ length: 24 }, (_, i) =>
    [
      1000 + i,
      (i * 1.5).toFixed(2),
      i % 2 === 0 ? "true" : "false",
      `2026-01-${String((i % 28) + 1).padStart(2, "0")}`,
      `2026-01-01T10:${String(i).padStart(2, "0")}:00Z`,
      `buyer${i}@example.com`,
      `https://shop.example.com/o/${i}`,
      statuses[i % 3],
      i % 5 === 0 ? "" : `note number ${i}`,
    ].join(","),
  ).join("\n") +
  "\n";

describe("REST inference", () => {
  test("types, required, enum, maxLength, fieldMappings, evidence; the draft saves and the sample passes it", async () => {
    const r = await postSample(h, ws, "/schemas/infer", { name: "orders.csv", content: SAMPLE });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const d = r.body;
    expect(d.rows).toBe(24);
    expect(d.detected).toEqual({ format: "csv", encoding: "utf-8", gzip: false, delimiter: "," });
    expect(d.truncated).toBe(false);
    expect(d.fieldMappings).toEqual([
      { source: "Order ID", target: "order_id" },
      { source: "Amount", target: "amount" },
      { source: "Paid", target: "paid" },
      { source: "Order Date", target: "order_date" },
      { source: "Shipped At", target: "shipped_at" },
      { source: "Email", target: "email" },
      { source: "Website", target: "website" },
      { source: "Status", target: "status" },
      { source: "Note", target: "note" },
    ]);
    const p = d.definition.properties;
    expect(p.order_id).toEqual({ type: "integer" });
    expect(p.amount).toEqual({ type: "number" });
    expect(p.paid).toEqual({ type: "boolean" });
    expect(p.order_date).toEqual({ type: "string", format: "date" });
    expect(p.shipped_at).toEqual({ type: "string", format: "date-time" });
    expect(p.email).toEqual({ type: "string", format: "email", maxLength: "buyer10@example.com".length });
    expect(p.website).toEqual({ type: "string", format: "uri", maxLength: "https://shop.example.com/o/10".length });
    expect(p.status).toEqual({ type: "string", enum: ["closed", "held", "open"], maxLength: 6 });
    expect(p.note).toEqual({ type: "string", maxLength: "note number 10".length });
    expect(d.definition.required).toEqual(["order_id", "amount", "paid", "order_date", "shipped_at", "email", "website", "status"]);
    const note = d.columns.find((c: { source: string }) => c.source === "Note");
    expect(note).toMatchObject({ target: "note", type: "string", required: false, enum: null, evidence: { values: 19, empties: 5, distinct: 19 } });
    expect(note.evidence.examples).toEqual(["note number 1", "note number 2", "note number 3"]);

    // Valid for the schemas API, and the sample passes it under the suggested mapping.
    const saved = await h.ok(ws, "POST", "/schemas", { name: "Orders (inferred)", definition: d.definition });
    const fx = await createPipeline(h, ws, { definition: d.definition, mappings: { fieldMappings: d.fieldMappings } });
    expect(saved.definition).toEqual(d.definition);
    const preview = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "orders.csv", content: SAMPLE });
    expect(preview.body.counts).toMatchObject({ total: 24, valid: 24, invalid: 0 });
    // Nothing stored by the inference (the schemas are the two this test saved).
    expect((await h.ok(ws, "GET", "/schemas")).data).toHaveLength(2);
  });

  test("JSON records: JSON types, keys missing from some records are not required, nested values get no type", async () => {
    const doc = JSON.stringify([{ id: 1, price: 2.5, ok: true, tags: ["a"] }, { id: 2, price: 3, ok: false }]);
    const r = await postSample(h, ws, "/schemas/infer", { name: "things.json", content: doc });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.definition.properties).toEqual({ id: { type: "integer" }, price: { type: "number" }, ok: { type: "boolean" }, tags: {} });
    expect(r.body.definition.required).toEqual(["id", "price", "ok"]);
    expect(r.body.columns[3]).toMatchObject({ source: "tags", type: null, required: false, evidence: { values: 1, empties: 1 } });
  });

  test("options read the sample: a semicolon file without a header row", async () => {
    const r = await postSample(h, ws, "/schemas/infer", { name: "x.txt", content: "a;1\nb;2\n" }, { options: JSON.stringify({ format: "csv", delimiter: ";", headerRow: false }) });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.columns.map((c: { source: string; type: string }) => [c.source, c.type])).toEqual([
      ["column_1", "string"],
      ["column_2", "integer"],
    ]);
  });

  test("bad input: no file, an unreadable file, malformed options, an unknown option value", async () => {
    expect((await postSample(h, ws, "/schemas/infer", null)).body.message).toContain("file: is required");
    const binary = await postSample(h, ws, "/schemas/infer", { name: "x.csv", content: new Uint8Array([0, 1, 2, 0, 0, 0, 255, 0, 3]) });
    expect(binary.status).toBe(400);
    expect(binary.body.message).toStartWith("file: ");
    const malformed = await postSample(h, ws, "/schemas/infer", { name: "x.csv", content: "a\n1\n" }, { options: "[" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toStartWith("options:");
    const unknown = await postSample(h, ws, "/schemas/infer", { name: "x.csv", content: "a\n1\n" }, { options: JSON.stringify({ encoding: "ebcdic" }) });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain("options.encoding");
  });
});

describe("GraphQL and tRPC inference", () => {
  test("the same draft from a sample given as text or base64", async () => {
    const rest = (await postSample(h, ws, "/schemas/infer", { name: "orders.csv", content: SAMPLE })).body;
    const viaTrpc = await h.trpc(ws).schemas.infer({ sample: { filename: "orders.csv", base64: Buffer.from(SAMPLE).toString("base64") } });
    expect(viaTrpc).toEqual(rest);
    const q = `mutation($input: InferSchemaSampleInput!) { inferSchema(input: $input) {
      definition fieldMappings { source target }
      columns { source target type required enum maxLength evidence { values empties distinct examples } }
      detected { format encoding gzip delimiter } rows truncated timedOut } }`;
    const g = await h.graphql(ws.apiKey, q, { input: { sample: { filename: "orders.csv", text: SAMPLE } } });
    expect(g.body.errors, JSON.stringify(g.body.errors)).toBeUndefined();
    const gq = g.body.data!.inferSchema;
    expect(gq.definition).toEqual(rest.definition);
    expect(gq.fieldMappings).toEqual(rest.fieldMappings);
    expect(gq.columns.map((c: { type: string }) => c.type)).toEqual(["integer", "number", "boolean", "date", "date-time", "email", "uri", "string", "string"]);
  });

  test("bad input names the member", async () => {
    const e = await h
      .trpc(ws)
      .schemas.infer({ sample: { filename: "", text: "a" } })
      .catch((x) => x);
    expect(e.code).toBe("BAD_REQUEST");
    expect(e.message).toContain("sample.filename: must not be empty");
  });
});

/** A workbook with a notes sheet first and the data in `Orders`, zipped in Excel's order (workbook first, as the streaming reader expects of real files). */
async function workbook(): Promise<Uint8Array> {
  const wb = new ExcelJS.Workbook();
  wb.addWorksheet("Notes").addRow(["not data"]);
  const sheet = wb.addWorksheet("Orders");
  sheet.addRow(["SKU", "Qty", "Name"]);
  sheet.addRow(["a-1", 3, "Bolt"]);
  sheet.addRow(["b-2", 10, "Nut"]);
  return excelOrder(new Uint8Array((await wb.xlsx.writeBuffer()) as ArrayBuffer));
}

describe("XLSX samples", () => {
  test("inference from base64 (tRPC) on a named sheet, and a preview of the same workbook over REST", async () => {
    const book = await workbook();
    const d = await h.trpc(ws).schemas.infer({ sample: { filename: "orders.xlsx", base64: Buffer.from(book).toString("base64") }, options: { sheet: "Orders" } as never });
    expect(d.detected.format).toBe("xlsx");
    expect(d.definition.properties).toEqual({ sku: { type: "string", maxLength: 3 }, qty: { type: "integer" }, name: { type: "string", maxLength: 4 } });
    const fx = await createPipeline(h, ws, { mappings: { fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty" }, { source: "Name", target: "name" }], options: { sheet: "Orders" } } });
    const r = await postSample(h, ws, `/pipelines/${fx.pipeline.id}/preview`, { name: "orders.xlsx", content: book });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.detected).toMatchObject({ format: "xlsx", sheet: "Orders", headerRow: true });
    expect(r.body.rows.map((x: { row: unknown }) => x.row)).toEqual([{ sku: "a-1", qty: 3, name: "Bolt" }, { sku: "b-2", qty: 10, name: "Nut" }]);
  });
});

describe("the draft's rules", () => {
  test("target names are normalized and unique", () => {
    const taken = new Set<string>();
    expect(["Order ID", "orderId", "order-id", "Café Name", "2nd", "!!!"].map((s, i) => targetName(s, taken, i))).toEqual([
      "order_id",
      "order_id_2",
      "order_id_3",
      "cafe_name",
      "c_2nd",
      "column_6",
    ]);
  });

  test("enum only for low-cardinality text seen often enough; mixed values fall back to string", () => {
    const few = new ColumnStats("few");
    for (const v of ["a", "b", "a"]) few.add(v);
    const many = new ColumnStats("many");
    for (let i = 0; i < 30; i++) many.add(i % 2 ? "x" : "y");
    const mixed = new ColumnStats("mixed");
    for (const v of ["1", "2.5", "x"]) mixed.add(v);
    const d = draftSchema([few, many, mixed], 30);
    expect(d.definition.properties).toEqual({
      few: { type: "string", maxLength: 1 },
      many: { type: "string", enum: ["x", "y"], maxLength: 1 },
      mixed: { type: "string", maxLength: 3 },
    });
    expect(d.definition.required).toEqual(["many"]);
  });
});
