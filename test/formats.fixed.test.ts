import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openInput } from "../src/engine/parse";
import { expectError } from "./helpers/expect";
import { fetchLink } from "./helpers/fixture-runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, uploadFile, waitForRun } from "./helpers/runs";

/**
 * Fixed-width input, from a real layout: a NACHA (ACH) payroll file, 94
 * characters a record, whose entry detail records (type 6) are the rows.
 * The column positions are those of the NACHA Operating Rules' entry detail
 * record; test/fixtures/inputs/ach-payroll.txt is one batch of four entries.
 */
const ACH = await Bun.file(`${import.meta.dir}/fixtures/inputs/ach-payroll.txt`).text();

const ENTRY_DETAIL = {
  columns: [
    { name: "recordType", start: 1, length: 1 },
    { name: "transactionCode", start: 2, end: 3 },
    { name: "receivingDfi", start: 4, end: 11 },
    { name: "checkDigit", start: 12, length: 1 },
    { name: "accountNumber", start: 13, end: 29 },
    { name: "amount", start: 30, end: 39 },
    { name: "individualId", start: 40, end: 54 },
    { name: "individualName", start: 55, end: 76 },
    { name: "discretionaryData", start: 77, end: 78 },
    { name: "addendaIndicator", start: 79, length: 1 },
    { name: "traceNumber", start: 80, end: 94 },
  ],
  recordType: { start: 1, value: "6" },
};

const SCHEMA = {
  type: "object",
  properties: {
    code: { type: "string", enum: ["22", "27", "32", "37"] },
    routing: { type: "string", pattern: "^[0-9]{8}$" },
    account: { type: "string" },
    amountCents: { type: "integer", minimum: 0 },
    employee: { type: "string" },
    name: { type: "string" },
    trace: { type: "string", pattern: "^[0-9]{15}$" },
  },
  required: ["code", "routing", "account", "amountCents", "name", "trace"],
};

const MAPPINGS = {
  fieldMappings: [
    { source: "transactionCode", target: "code" },
    { source: "receivingDfi", target: "routing" },
    { source: "accountNumber", target: "account" },
    { source: "amount", target: "amountCents", transform: "integer" },
    { source: "individualId", target: "employee" },
    { source: "individualName", target: "name" },
    { source: "traceNumber", target: "trace" },
  ],
  options: { format: "fixed", fixedWidth: ENTRY_DETAIL },
};

const EXPECTED = [
  { code: "22", routing: "07200002", account: "4455667788", amountCents: 125000, employee: "EMP-0001", name: "JANE DOE", trace: "091000010000001" },
  { code: "22", routing: "02100002", account: "000123456789", amountCents: 98765, employee: "EMP-0002", name: "JOHN Q PUBLIC", trace: "091000010000002" },
  { code: "32", routing: "01100001", account: "99887766", amountCents: 4500, employee: "EMP-0003", name: "MARÍA LÓPEZ", trace: "091000010000003" },
  { code: "27", routing: "06100015", account: "5544332211", amountCents: 2000, employee: "EMP-0004", name: "ALEX SMITH", trace: "091000010000004" },
];

async function* once(text: string): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode(text);
}

async function read(text: string, fixedWidth: object, extra: object = {}) {
  const input = await openInput(once(text), { filename: "f.txt", format: "fixed", fixedWidth: fixedWidth as never, ...extra });
  const rows: Record<string, unknown>[] = [];
  for await (const b of input.batches) rows.push(...b);
  return { rows, summary: input.summary };
}

describe("the fixed-width reader", () => {
  test("cuts records at the layout's positions, keeps only the chosen record type, trims blanks", async () => {
    const { rows, summary } = await read(ACH, ENTRY_DETAIL);
    expect(summary.format).toBe("fixed");
    expect(summary.columns).toEqual(ENTRY_DETAIL.columns.map((c) => c.name));
    expect(rows.length).toBe(4);
    expect(rows[2]).toEqual({
      recordType: "6",
      transactionCode: "32",
      receivingDfi: "01100001",
      checkDigit: "5",
      accountNumber: "99887766",
      amount: "0000004500",
      individualId: "EMP-0003",
      individualName: "MARÍA LÓPEZ",
      discretionaryData: "",
      addendaIndicator: "0",
      traceNumber: "091000010000003",
    });
    expect(summary.raggedRows).toBe(0);
  });

  test("trim right keeps leading blanks, none keeps all; skipLines passes over a title", async () => {
    const text = "STATEMENT 2026-11\n  A1  x\n";
    const spec = { columns: [{ name: "a", start: 1, length: 4 }, { name: "b", start: 5, length: 3 }], skipLines: 1 };
    expect((await read(text, { ...spec, trim: "right" })).rows).toEqual([{ a: "  A1", b: "  x" }]);
    expect((await read(text, { ...spec, trim: "none" })).rows).toEqual([{ a: "  A1", b: "  x" }]);
    expect((await read(text, spec)).rows).toEqual([{ a: "A1", b: "x" }]);
  });

  test("a short line leaves out the columns past its end and is counted as ragged; so is text past the layout", async () => {
    const spec = { columns: [{ name: "id", start: 1, length: 3 }, { name: "city", start: 4, length: 6 }, { name: "zip", start: 10, length: 5 }] };
    const { rows, summary } = await read("001Paris 75001\n002Lyon\n003Nice  06000EXTRA\n", spec);
    expect(rows).toEqual([
      { id: "001", city: "Paris", zip: "75001" },
      { id: "002", city: "Lyon" },
      { id: "003", city: "Nice", zip: "06000" },
    ]);
    expect(summary.raggedRows).toBe(2);
    expect(summary.warnings[0]).toBe("line 2 (record 2) is 7 characters long; the layout spans 14");
  });

  test("records cut across many small chunks are whole; a line without an end past the record limit is refused", async () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => `${String(i).padStart(6, "0")}${"n".repeat(20)}`);
    const bytes = new TextEncoder().encode(lines.join("\r\n"));
    async function* pieces() {
      for (let at = 0; at < bytes.length; at += 7) yield bytes.slice(at, at + 7);
    }
    const input = await openInput(pieces(), { filename: "f.dat", format: "fixed", fixedWidth: { columns: [{ name: "n", start: 1, length: 6 }, { name: "t", start: 7, length: 20 }] } });
    const rows: Record<string, unknown>[] = [];
    for await (const b of input.batches) rows.push(...b);
    expect(rows.length).toBe(10_000);
    expect(rows[9_999]).toEqual({ n: "009999", t: "n".repeat(20) });

    const long = await openInput(once("x".repeat(5000)), { filename: "f.dat", format: "fixed", fixedWidth: { columns: [{ name: "a", start: 1, length: 1 }] }, limits: { maxRecordBytes: 1000 } });
    const drain = async () => {
      for await (const _ of long.batches);
    };
    expect(drain()).rejects.toThrow(/Line 1 is longer than 1000 bytes without a line end/);
  });
});

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});

afterAll(async () => {
  await h.close();
});

describe("a fixed-width pipeline through the API", () => {
  test("upload -> run -> processed JSON holds the ACH entries", async () => {
    const fx = await createPipeline(h, ws, { definition: SCHEMA, mappings: MAPPINGS });
    expect(fx.pipeline.mappings).toMatchObject({ options: { format: "fixed", fixedWidth: ENTRY_DETAIL } });
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "PAYROLL.ACH.txt", content: ACH }, { type: "text/plain" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const done = await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
    expect(done.status, JSON.stringify(done.metadata)).toBe("completed");
    expect(done.metadata.rows).toMatchObject({ total: 4, valid: 4 });
    expect(done.metadata.input).toMatchObject({ format: "fixed" });
    const link = await h.ok(ws, "GET", `/files/pipeline-runs/${res.body.id}/processed`);
    expect(await (await fetchLink(h, link.url)).json()).toEqual(EXPECTED);
  });

  test("a short entry line fails the run naming the missing field", async () => {
    const fx = await createPipeline(h, ws, { definition: SCHEMA, mappings: MAPPINGS });
    // The second entry ends after its amount (position 39): name and trace number are missing.
    const cut = ACH.split("\r\n")
      .map((l) => (l.startsWith("622021") ? l.slice(0, 39) : l))
      .join("\r\n");
    expect(cut).not.toBe(ACH);
    const res = await uploadFile(h, ws, fx.pipeline.id, { name: "short.txt", content: cut }, { type: "text/plain" });
    const done = await waitForRun(h, ws, res.body.id, ["completed", "failed"]);
    expect(done.status).toBe("failed");
    expect(done.errorMessage).toContain("First errors: row 2 name: is required; row 2 trace: is required.");
  });

  test("a bad layout is refused naming the member, and nothing is stored", async () => {
    const before = (await h.api(ws, "GET", "/pipelines?limit=100")).headers.get("x-total-count");
    const cases: [object, RegExp][] = [
      [{ format: "fixed" }, /^mappings\.options\.fixedWidth: is required when format is "fixed"/],
      [{ fixedWidth: ENTRY_DETAIL }, /^mappings\.options\.format: must be "fixed" when fixedWidth is set/],
      [{ format: "fixed", fixedWidth: { columns: [{ name: "a", start: 0, length: 2 }] } }, /^mappings\.options\.fixedWidth\.columns\[0\]\.start: must be at least 1/],
      [{ format: "fixed", fixedWidth: { columns: [{ name: "a", start: 5, end: 3 }] } }, /^mappings\.options\.fixedWidth\.columns\[0\]\.end: must be at least start \(5\)/],
      [{ format: "fixed", fixedWidth: { columns: [{ name: "a", start: 1, length: 2, end: 2 }] } }, /^mappings\.options\.fixedWidth\.columns\[0\]\.length: give either length or end/],
      [{ format: "fixed", fixedWidth: { columns: [{ name: "a", start: 1, length: 2 }, { name: "a", start: 3, length: 1 }] } }, /columns\[1\]\.name: 'a' is already the name of columns\[0\]/],
      [{ format: "fixed", fixedWidth: { columns: [] } }, /fixedWidth\.columns: must list at least one column/],
    ];
    const fx = await createPipeline(h, ws, { definition: SCHEMA, mappings: MAPPINGS });
    const total = (await h.api(ws, "GET", "/pipelines?limit=100")).headers.get("x-total-count");
    for (const [options, message] of cases) {
      expectError(
        await h.api(ws, "POST", "/pipelines", { name: "Bad layout", clientId: fx.connection.id, schemaId: fx.schema.id, mappings: { fieldMappings: [], options } }),
        400,
        "invalid_input",
        message,
      );
    }
    expect((await h.api(ws, "GET", "/pipelines?limit=100")).headers.get("x-total-count")).toBe(total);
    expect(Number(total)).toBe(Number(before) + 1);
  });
});
