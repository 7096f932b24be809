import { describe, expect, test } from "bun:test";
import ExcelJS from "exceljs";
import fc from "fast-check";
import Papa from "papaparse";
import { gzipSync } from "node:zlib";
import { openInput, type InputSummary } from "../src/engine/parse/index";
import { EngineInputError, type ParseOptions, type SourceRecord } from "../src/engine/types";
import { generatedCases, repeated } from "./fixtures/malformed/generated";
import { excelOrder } from "./helpers/xlsx";

const INPUTS = `${import.meta.dir}/fixtures/inputs`;
const MALFORMED = `${import.meta.dir}/fixtures/malformed`;

/** Bytes as a source cut into `size`-byte chunks (small sizes put every boundary somewhere awkward). */
async function* chunked(data: string | Uint8Array, size = 7): AsyncGenerator<Uint8Array> {
  const b = typeof data === "string" ? new TextEncoder().encode(data) : data;
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

async function readAll(source: AsyncIterable<Uint8Array>, opts: ParseOptions): Promise<{ summary: InputSummary; records: SourceRecord[]; batches: number }> {
  const input = await openInput(source, opts);
  const records: SourceRecord[] = [];
  let batches = 0;
  for await (const batch of input.batches) {
    batches++;
    for (const r of batch) records.push(r);
  }
  return { summary: input.summary, records, batches };
}

const readText = (text: string | Uint8Array, opts: Partial<ParseOptions> & { filename?: string } = {}, size = 7) =>
  readAll(chunked(text, size), { filename: "data.csv", ...opts });
const readFile = (path: string, opts: Partial<ParseOptions> = {}) =>
  readAll(Bun.file(path).stream(), { filename: path.slice(path.lastIndexOf("/") + 1), ...opts });

async function inputError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(EngineInputError);
    return (err as Error).message;
  }
  throw new Error("expected an EngineInputError, the input was read");
}

// First: the RSS checks measure growth best before other tests have grown the heap.
describe("streaming", () => {
  test("source bytes are pulled only as batches are taken, and released on an early stop", async () => {
    let pulled = 0;
    let released = false;
    const total = 50 * 1024 * 1024;
    const source = (async function* () {
      try {
        for await (const chunk of repeated("id,name\n", "1,abcdefgh\n", total)) {
          pulled += chunk.byteLength;
          yield chunk;
        }
      } finally {
        released = true;
      }
    })();
    const input = await openInput(source, { filename: "big.csv" });
    expect(pulled).toBeLessThan(2 * 1024 * 1024);
    for await (const batch of input.batches) {
      expect(batch.length).toBeGreaterThan(0);
      break;
    }
    expect(pulled).toBeLessThan(4 * 1024 * 1024);
    expect(released).toBe(true);
  });

  test("a generated ~200 MB CSV streams through with small RSS growth (in a process of its own)", async () => {
    const rowsWanted = 2_000_000;
    const child = Bun.spawn([process.execPath, `${import.meta.dir}/scripts/parse-rss.ts`, String(rowsWanted)], { stdout: "pipe", stderr: "inherit" });
    const out = await new Response(child.stdout).text();
    expect(await child.exited).toBe(0);
    const { rows, last, growthBytes } = JSON.parse(out) as { rows: number; last: Record<string, string>; growthBytes: number };
    expect(rows).toBe(rowsWanted);
    expect(last).toMatchObject({ id: String(rowsWanted - 1), city: `City, ${(rowsWanted - 1) % 100}` });
    expect(growthBytes).toBeLessThan(150 * 1024 * 1024);
  }, 120_000);
});

describe("CSV and TSV", () => {
  test("quoted fields with delimiters, quotes and line breaks; UTF-8 BOM stripped; CRLF", async () => {
    const { summary, records } = await readFile(`${INPUTS}/people.csv`);
    expect(summary).toMatchObject({ format: "csv", gzip: false, encoding: "utf-8", columns: ["id", "name", "email", "age", "city"] });
    expect(records).toEqual([
      { id: "1", name: "Ann Lee", email: "ann@example.com", age: "34", city: "Zürich" },
      { id: "2", name: 'Bob "Bobby" Ray', email: "bob@example.com", age: "41", city: "Paris" },
      { id: "3", name: "Cy, Jr.", email: "cy@example.com", age: "29", city: "Rome\nItaly" },
    ]);
  });

  test("the same records whatever the chunk size, down to one byte", async () => {
    const bytes = await Bun.file(`${INPUTS}/people.csv`).bytes();
    const whole = (await readText(bytes, {}, bytes.length)).records;
    for (const size of [1, 2, 3, 5, 64]) expect((await readText(bytes, {}, size)).records).toEqual(whole);
  });

  test("random tables written by papaparse read back identically across random chunk boundaries", async () => {
    const cell = fc.string({ unit: fc.constantFrom("a", "b", " ", ",", ";", '"', "\n", "\r\n", "é", "€", "😀", "x"), maxLength: 6 });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }).chain((cols) => fc.array(fc.array(cell, { minLength: cols, maxLength: cols }), { minLength: 1, maxLength: 12 })),
        fc.integer({ min: 1, max: 40 }),
        async (rows, size) => {
          const header = rows[0]!.map((_, i) => `h${i}`);
          const text = Papa.unparse([header, ...rows], { quotes: true, newline: "\r\n" });
          const { records } = await readText(text, { delimiter: ",", skipEmptyLines: false }, size);
          expect(records).toEqual(rows.map((r) => Object.fromEntries(r.map((v, i) => [header[i], v]))));
        },
      ),
      { numRuns: 150 },
    );
  });

  test("TSV by extension; semicolon and tab delimiters detected from the content", async () => {
    const tsv = await readFile(`${INPUTS}/people.tsv`);
    expect(tsv.summary.format).toBe("tsv");
    expect(tsv.records[2]).toEqual({ id: "3", name: "Cy, Jr.", email: "cy@example.com", age: "29", city: "Rome" });
    const semi = await readFile(`${INPUTS}/people-semicolon.csv`);
    expect(semi.summary.format).toBe("csv");
    expect(semi.records[2]?.name).toBe("Cy; Jr.");
    const sniffed = await readText("a\tb\n1\t2\n", { filename: "upload" });
    expect(sniffed.summary.format).toBe("tsv");
    expect(sniffed.records).toEqual([{ a: "1", b: "2" }]);
  });

  test("delimiter and quote options override detection", async () => {
    const { records } = await readText("a|b\n'x|y'|2\n", { delimiter: "|", quote: "'" });
    expect(records).toEqual([{ a: "x|y", b: "2" }]);
    const forced = await readText("a;b\n1;2\n", { delimiter: "," });
    expect(forced.summary.columns).toEqual(["a;b"]);
  });

  test("headerRow false names columns column_1..column_N", async () => {
    const { summary, records } = await readFile(`${INPUTS}/people-noheader.csv`, { headerRow: false });
    expect(summary.columns).toEqual(["column_1", "column_2", "column_3"]);
    expect(records).toEqual([
      { column_1: "1", column_2: "Ann", column_3: "34" },
      { column_1: "2", column_2: "Bob", column_3: "41" },
    ]);
  });

  test("blank lines skipped by default (also ,,, lines); kept as short rows with skipEmptyLines false", async () => {
    const text = "a,b\n1,2\n\n,,\n3,4\n";
    expect((await readText(text)).records).toEqual([{ a: "1", b: "2" }, { a: "3", b: "4" }]);
    const kept = await readText(text, { skipEmptyLines: false });
    expect(kept.records).toEqual([{ a: "1", b: "2" }, { a: "" }, { a: "", b: "" }, { a: "3", b: "4" }]);
    expect(kept.summary.raggedRows).toBe(1);
  });

  test("ragged rows are kept and counted; empty trailing fields are not ragged", async () => {
    const { summary, records } = await readFile(`${MALFORMED}/ragged-rows.csv`);
    expect(records).toEqual([
      { id: "1", name: "Ann" },
      { id: "2", name: "Bob", city: "Paris", column_4: "extra" },
      { id: "3", name: "Cy", city: "Rome" },
      { id: "4", name: "Di", city: "Oslo" },
    ]);
    expect(summary.raggedRows).toBe(2);
    expect(summary.warnings).toEqual(["record 1 has 2 fields, the header has 3", "record 2 has 4 fields, the header has 3"]);
  });

  test("a __proto__ header is an ordinary column", async () => {
    const { records } = await readFile(`${MALFORMED}/proto-header.csv`);
    const rec = records[0]!;
    expect(Object.getPrototypeOf(rec)).toBe(Object.prototype);
    expect(Object.keys(rec)).toEqual(["__proto__", "constructor", "name"]);
    expect(Object.getOwnPropertyDescriptor(rec, "__proto__")?.value).toBe("polluted");
  });

  test("batches are a few thousand records each", async () => {
    const text = `n\n${Array.from({ length: 10_000 }, (_, i) => i).join("\n")}\n`;
    const input = await openInput(chunked(text, 4096), { filename: "n.csv" });
    const sizes: number[] = [];
    for await (const b of input.batches) sizes.push(b.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(10_000);
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(5000);
  });
});

describe("encodings and compression", () => {
  test("windows-1252 and latin1 by option; without it the error names the option", async () => {
    const cp = await readFile(`${INPUTS}/people-windows1252.csv`, { encoding: "windows-1252" });
    expect(cp.summary.encoding).toBe("windows-1252");
    expect(cp.records).toEqual([
      { id: "1", name: "Renée", note: "costs 5 €" },
      { id: "2", name: "Zoë", note: "“quoted”" },
    ]);
    const l1 = await readFile(`${INPUTS}/people-latin1.csv`, { encoding: "latin1" });
    expect(l1.records[0]).toEqual({ id: "1", name: "Renée", note: "¼ off" });
    const msg = await inputError(readFile(`${INPUTS}/people-windows1252.csv`));
    expect(msg).toContain("not valid UTF-8");
    expect(msg).toContain("offset 18");
    expect(msg).toContain('mappings.options.encoding to "windows-1252"');
  });

  test("UTF-16 LE with a BOM, and UTF-16 LE/BE without one, decoded", async () => {
    const le = await readFile(`${INPUTS}/people-utf16le.csv`);
    expect(le.summary.encoding).toBe("utf-16le");
    expect(le.records).toEqual([
      { id: "1", name: "Ann", city: "Zürich" },
      { id: "2", name: "Bob", city: "Kraków" },
    ]);
    const text = "id,name\n1,Ann\n2,Łucja\n";
    const noBom = await readText(Buffer.from(text, "utf16le"), {}, 3);
    expect(noBom.records[1]).toEqual({ id: "2", name: "Łucja" });
    const be = Buffer.from(text, "utf16le").swap16();
    const bom = await readText(Buffer.concat([Buffer.from([0xfe, 0xff]), be]));
    expect(bom.summary.encoding).toBe("utf-16be");
    expect(bom.records[1]).toEqual({ id: "2", name: "Łucja" });
  });

  test("a multi-byte character split across chunks stays whole", async () => {
    const { records } = await readText("a\n€😀é\n", {}, 1);
    expect(records).toEqual([{ a: "€😀é" }]);
  });

  test("gzip is decompressed on the fly, by magic bytes whatever the name", async () => {
    const gz = await readFile(`${INPUTS}/people.csv.gz`);
    expect(gz.summary).toMatchObject({ format: "csv", gzip: true });
    expect(gz.records).toEqual((await readFile(`${INPUTS}/people.csv`)).records);
    const json = await readText(gzipSync('[{"a":1}]'), { filename: "upload.bin" });
    expect(json.summary).toMatchObject({ format: "json", gzip: true });
    expect(json.records).toEqual([{ a: 1 }]);
  });
});

describe("format selection", () => {
  test("the option wins over the name; the name over the content", async () => {
    const asCsv = await readText('[{"a":1}]', { filename: "x.json", format: "csv", delimiter: ";" });
    expect(asCsv.summary.format).toBe("csv");
    const asJson = await readText('{"a":1}\n{"a":2}\n', { filename: "x.txt", format: "ndjson" });
    expect(asJson.records).toEqual([{ a: 1 }, { a: 2 }]);
  });

  test("content sniffing without a known extension: JSON, NDJSON, XML, XLSX, CSV", async () => {
    const sniff = async (data: string | Uint8Array) => (await openInput(chunked(data, 1024), { filename: "upload" })).summary.format;
    expect(await sniff('  [{"a":1}]')).toBe("json");
    expect(await sniff('{"a":1}\n{"a":2}\n')).toBe("ndjson");
    expect(await sniff('{\n "data": []\n}')).toBe("json");
    expect(await sniff("<?xml version='1.0'?><r><x/></r>")).toBe("xml");
    expect(await sniff(await workbook())).toBe("xlsx");
    expect(await sniff("a,b\n1,2\n")).toBe("csv");
  });

  test("NDJSON saved as .json is read as NDJSON", async () => {
    const { summary, records } = await readText('{"a":1}\n{"a":2}\n', { filename: "x.json" });
    expect(summary.format).toBe("ndjson");
    expect(records).toEqual([{ a: 1 }, { a: 2 }]);
  });
});

describe("JSON and NDJSON", () => {
  test("a top-level array; columns are keys in first-seen order", async () => {
    const { summary, records } = await readFile(`${INPUTS}/people.json`);
    expect(summary.columns).toEqual(["id", "name", "age", "tags", "address"]);
    expect(records[1]).toEqual({ id: 2, name: "Bob Ray", age: 41, address: { city: "Paris" } });
    expect(records).toHaveLength(3);
  });

  test("an array under a dotted recordPath; an empty array there is zero records", async () => {
    const { records } = await readFile(`${INPUTS}/people-nested.json`, { recordPath: "data.items" });
    expect(records).toEqual([
      { id: 1, name: "Ann Lee" },
      { id: 2, name: "Bob Ray" },
    ]);
    expect((await readText('{"data":{"items":[]}}', { filename: "x.json", recordPath: "data.items" })).records).toEqual([]);
    expect(await inputError(readText('{"data":{"items":{"a":1}}}', { filename: "x.json", recordPath: "data.items" }))).toContain("is an object, not an array");
  });

  test("NDJSON line by line, blank lines skipped, errors by line number", async () => {
    const { records } = await readFile(`${INPUTS}/people.ndjson`);
    expect(records.map((r) => r.id)).toEqual([1, 2, 3]);
    expect(await inputError(readText('{"a":1}\n\n[1]\n', { filename: "x.ndjson" }))).toContain("Line 3 is an array");
  });
});

describe("XML", () => {
  test("children of the root are records; attributes as @name; entities and CDATA decoded", async () => {
    const { summary, records } = await readFile(`${INPUTS}/people.xml`);
    expect(summary.format).toBe("xml");
    expect(records).toEqual([
      { "@id": "1", name: "Ann Lee", email: "ann@example.com", city: "Zürich" },
      { "@id": "2", name: "Bob & Co", email: "bob@example.com", city: "Paris <FR>" },
      { "@id": "3", name: "Cy", email: "", city: "Rome" },
    ]);
  });

  test("recordPath names the repeated element (root name optional); other elements are skipped", async () => {
    const doc = `<export><header><n>2</n></header><items><item><v>1</v></item><!-- <item> --><item><v>2</v><sub><v>9</v></sub></item></items></export>`;
    for (const recordPath of ["export.items.item", "items.item"]) {
      const { records } = await readText(doc, { filename: "x.xml", recordPath }, 5);
      expect(records).toEqual([{ v: "1" }, { v: "2", sub: { v: "9" } }]);
    }
  });

  test("repeated child elements become arrays; a self-closing record is an empty record", async () => {
    const { records } = await readText("<r><row><t>a</t><t>b</t></row><row/></r>", { filename: "x.xml" });
    expect(records).toEqual([{ t: ["a", "b"] }, {}]);
  });
});

async function workbook(): Promise<Uint8Array> {
  const wb = new ExcelJS.Workbook();
  wb.addWorksheet("Notes").addRow(["not data"]);
  const ws = wb.addWorksheet("Orders");
  ws.addRow(["id", "customer", "ordered", "total", "doubled", "note", "paid"]);
  ws.addRow([1, "Ann", new Date(Date.UTC(2024, 0, 5)), 12.5, { formula: "D2*2", result: 25 }, { richText: [{ text: "rich " }, { text: "text" }] }, true]);
  ws.addRow([2, "Bob", new Date(Date.UTC(2024, 0, 6, 13, 30)), 7, null, { text: "link", hyperlink: "https://example.com" }, false]);
  ws.addRow([]);
  ws.addRow([3, "Cy"]);
  return excelOrder(new Uint8Array((await wb.xlsx.writeBuffer()) as ArrayBuffer));
}


describe("XLSX", () => {
  test("the first sheet by default", async () => {
    const { summary, records } = await readText(await workbook(), { filename: "book.xlsx" }, 4096);
    expect(summary).toMatchObject({ format: "xlsx", columns: ["not data"] });
    expect(records).toEqual([]);
  });

  test("a named sheet; cells as plain values (dates ISO, formulas' results, rich text, hyperlinks as text); empty rows skipped", async () => {
    const { summary, records } = await readText(await workbook(), { filename: "book.xlsx", sheet: "Orders" }, 999);
    expect(summary.columns).toEqual(["id", "customer", "ordered", "total", "doubled", "note", "paid"]);
    expect(records).toEqual([
      { id: 1, customer: "Ann", ordered: "2024-01-05", total: 12.5, doubled: 25, note: "rich text", paid: true },
      { id: 2, customer: "Bob", ordered: "2024-01-06T13:30:00.000Z", total: 7, doubled: null, note: "link", paid: false },
      { id: 3, customer: "Cy", ordered: null, total: null, doubled: null, note: null, paid: null },
    ]);
  });

  test("a missing sheet names the sheets there are; gzip-compressed workbooks are read", async () => {
    expect(await inputError(readText(await workbook(), { filename: "b.xlsx", sheet: "Nope" }, 4096))).toContain('its sheets are: "Notes", "Orders"');
    const { records } = await readText(gzipSync(await workbook()), { filename: "b.xlsx.gz", sheet: "Orders" }, 4096);
    expect(records).toHaveLength(3);
  });
});

describe("limits", () => {
  test("maxColumns and maxRecordBytes are honoured when set low", async () => {
    expect(await inputError(readText("a,b,c\n1,2,3\n", { limits: { maxColumns: 2 } }))).toContain("The header row has 3 columns; at most 2");
    expect(await inputError(readText(`a\n${"x".repeat(200)}\n`, { limits: { maxRecordBytes: 100 } }, 1000))).toContain("Record 1 is longer than 100 bytes");
    expect(await inputError(readText(`[{"a":"${"x".repeat(200)}"}]`, { filename: "x.json", limits: { maxRecordBytes: 100 } }, 1000))).toContain(
      "Record 1 is larger than 100 bytes",
    );
    expect(await inputError(readText(`<r><row>${"x".repeat(200)}</row></r>`, { filename: "x.xml", limits: { maxRecordBytes: 100 } }))).toContain(
      "record 1 is larger than 100 bytes",
    );
    expect(await inputError(readText(`{"a":"${"x".repeat(200)}"}\n`, { filename: "x.ndjson", limits: { maxRecordBytes: 100 } }))).toContain(
      "longer than 100 bytes",
    );
  });

  for (const c of generatedCases) {
    test(`generated: ${c.name}`, async () => {
      const before = process.memoryUsage().rss;
      const outcome = readAll(c.source(), { filename: c.filename, ...c.options });
      if ("error" in c.expect) expect(await inputError(outcome)).toContain(c.expect.error);
      else expect((await outcome).records).toHaveLength(c.expect.rows);
      // The limit is 16 MiB of text: reading stops long before 100 MB is held.
      expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
    });
  }
});

interface CorpusCase {
  file: string;
  options?: Partial<ParseOptions>;
  expect: { error?: string; rows?: number; columns?: string[]; raggedRows?: number };
}

describe("malformed corpus (test/fixtures/malformed/cases.json)", async () => {
  const cases = (await Bun.file(`${MALFORMED}/cases.json`).json()) as CorpusCase[];

  test("every committed file has a case, and every case a file", async () => {
    const files = [...new Bun.Glob("*").scanSync(MALFORMED)].filter((f) => !["cases.json", "README.md", "generated.ts"].includes(f)).sort();
    expect(cases.map((c) => c.file).sort()).toEqual(files);
  });

  for (const c of cases) {
    test(`${c.file}: ${c.expect.error ? `fails with "${c.expect.error}"` : `${c.expect.rows} rows`}`, async () => {
      const outcome = readFile(`${MALFORMED}/${c.file}`, c.options);
      if (c.expect.error) {
        expect(await inputError(outcome)).toContain(c.expect.error);
        return;
      }
      const { summary, records } = await outcome;
      expect(records).toHaveLength(c.expect.rows!);
      if (c.expect.columns) expect(summary.columns).toEqual(c.expect.columns);
      if (c.expect.raggedRows !== undefined) expect(summary.raggedRows).toBe(c.expect.raggedRows);
    });
  }
});
