import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import type { ObjectStore } from "../src/adapters/storage/port";
import { processFile } from "../src/engine/process";
import type { ProcessRequest, SchemaRef } from "../src/engine/types";
import { jsonLines, localStore, PEOPLE_SCHEMA, request } from "./helpers/engine";

const INPUTS = `${import.meta.dir}/fixtures/inputs`;
const t = localStore();
afterAll(() => t.close());

async function run(filename: string, body: Uint8Array | string, mappings: unknown = {}, schema?: SchemaRef, outputFormat?: ProcessRequest["outputFormat"]) {
  const req = request(t, filename, mappings, schema, outputFormat);
  await t.store.put(req.originalKey, body);
  const outcome = await processFile(req, t.store);
  return { req, outcome, text: await t.text(req.processedKey), rejects: await t.text(req.rejectsKey) };
}

const fixture = (name: string) => readFileSync(`${INPUTS}/${name}`);
const loose: SchemaRef = { id: "sch_loose", version: "1", definition: { type: "object", properties: { id: { type: "integer" }, name: { type: "string" }, age: { type: "integer" }, city: { type: "string" } }, required: ["id"] } };

describe("each input format end to end", () => {
  test("CSV with BOM, quoted quotes and a quoted newline; the schema coerces text", async () => {
    const { outcome, text } = await run("people.csv", fixture("people.csv"));
    expect(outcome).toMatchObject({ ok: true, counts: { total: 3, valid: 3, invalid: 0, skipped: 0, quarantined: 0 }, errors: [], input: { format: "csv", gzip: false, encoding: "utf-8" }, rejects: null });
    expect(outcome.processed).toMatchObject({ rows: 3, format: "json", mimetype: "application/json" });
    expect(outcome.processed!.size).toBe(Buffer.byteLength(text!));
    expect(jsonLines(text!)).toEqual([
      { id: 1, name: "Ann Lee", email: "ann@example.com", age: 34, city: "Zürich" },
      { id: 2, name: 'Bob "Bobby" Ray', email: "bob@example.com", age: 41, city: "Paris" },
      { id: 3, name: "Cy, Jr.", email: "cy@example.com", age: 29, city: "Rome\nItaly" },
    ]);
  });

  test("gzip is decompressed on the fly", async () => {
    const { outcome, text } = await run("people.csv.gz", fixture("people.csv.gz"));
    expect(outcome.input).toEqual({ format: "csv", gzip: true, encoding: "utf-8", header: { unusedColumns: [] } });
    expect(jsonLines(text!)).toHaveLength(3);
  });

  test("TSV and a semicolon-delimited CSV are detected", async () => {
    for (const file of ["people.tsv", "people-semicolon.csv"]) {
      const { outcome, text } = await run(file, fixture(file));
      expect(outcome.ok).toBe(true);
      expect((jsonLines(text!)[2] as { name: string }).name).toMatch(/^Cy[;,] Jr\.$/);
    }
  });

  test("no header row: positional column names, mapped explicitly", async () => {
    const { outcome, text } = await run("people-noheader.csv", fixture("people-noheader.csv"), {
      options: { headerRow: false },
      fieldMappings: [
        { target: "id", source: "column_1", transform: "integer" },
        { target: "name", source: "column_2", transform: "uppercase" },
        { target: "age", source: "column_3" },
      ],
    });
    expect(outcome.ok).toBe(true);
    expect(jsonLines(text!)).toEqual([
      { id: 1, name: "ANN", age: 34 },
      { id: 2, name: "BOB", age: 41 },
    ]);
  });

  test("Latin-1, Windows-1252 and UTF-16 are decoded", async () => {
    const schema: SchemaRef = { id: "sch_note", version: "1", definition: { type: "object", properties: { id: { type: "integer" }, name: { type: "string" }, note: { type: "string" } } } };
    const latin = await run("people-latin1.csv", fixture("people-latin1.csv"), { options: { encoding: "latin1" } }, schema);
    expect(latin.outcome.input?.encoding).toBe("latin1");
    expect(jsonLines(latin.text!)).toEqual([{ id: 1, name: "Renée", note: "¼ off" }, { id: 2, name: "Zoë", note: "ß" }]);
    const cp = await run("people-windows1252.csv", fixture("people-windows1252.csv"), { options: { encoding: "windows-1252" } }, schema);
    expect(jsonLines(cp.text!)).toEqual([{ id: 1, name: "Renée", note: "costs 5 €" }, { id: 2, name: "Zoë", note: "“quoted”" }]);
    const le = await run("people-utf16le.csv", fixture("people-utf16le.csv"), {}, loose);
    expect(le.outcome.input?.encoding).toBe("utf-16le");
    expect((jsonLines(le.text!)[0] as { city: string }).city).toBe("Zürich");
  });

  test("JSON array, JSON under a record path, NDJSON", async () => {
    const json = await run("people.json", fixture("people.json"), { fieldMappings: [{ target: "id", source: "id" }, { target: "name", source: "name" }, { target: "age", source: "age" }, { target: "tags", source: "tags" }] }, {
      ...loose,
      id: "sch_json",
      definition: { ...loose.definition, properties: { ...(loose.definition.properties as object), age: { type: ["integer", "null"] }, tags: { type: "array" } } },
    });
    expect(json.outcome.ok).toBe(true);
    expect(jsonLines(json.text!)).toEqual([{ id: 1, name: "Ann Lee", age: 34, tags: ["a", "b"] }, { id: 2, name: "Bob Ray", age: 41 }, { id: 3, name: "Cy", age: null }]);
    const nested = await run("people-nested.json", fixture("people-nested.json"), { options: { recordPath: "data.items" } }, loose);
    expect(jsonLines(nested.text!)).toEqual([{ id: 1, name: "Ann Lee" }, { id: 2, name: "Bob Ray" }]);
    const nd = await run("people.ndjson", fixture("people.ndjson"), {}, loose);
    expect(nd.outcome.input?.format).toBe("ndjson");
    expect(jsonLines(nd.text!)).toEqual([{ id: 1, name: "Ann Lee" }, { id: 2, name: "Bob Ray", age: 41 }, { id: 3, name: "Cy" }]);
  });

  test("XML records with attributes, entities and CDATA", async () => {
    const mappings = {
      options: { recordPath: "people.person" },
      fieldMappings: [{ target: "id", source: "@id", transform: "integer" }, { target: "name", source: "name" }, { target: "email", source: "email" }, { target: "city", source: "city" }],
    };
    const { outcome, text } = await run("people.xml", fixture("people.xml"), mappings);
    expect(outcome.ok).toBe(true);
    expect(outcome.input?.format).toBe("xml");
    const rows = jsonLines(text!) as Record<string, unknown>[];
    expect(rows.map((r) => r.city)).toEqual(["Zürich", "Paris <FR>", "Rome"]);
    expect(rows[1]).toMatchObject({ id: 2, name: "Bob & Co" });
    // <email/> is empty, so absent.
    expect(rows[2]).toEqual({ id: 3, name: "Cy", city: "Rome" });
  });

  test("CSV and XML output for delivery", async () => {
    const mappings = { fieldMappings: [{ target: "id", source: "id" }, { target: "full name", source: "name" }, { target: "city", source: "city" }] };
    const schema: SchemaRef = { id: "sch_out", version: "1", definition: { type: "object", properties: { id: { type: "integer" }, "full name": { type: "string" }, city: { type: "string" }, country: { type: "string", default: "CH" } } } };
    const csv = await run("people.csv", fixture("people.csv"), mappings, schema, "csv");
    expect(csv.outcome.processed).toMatchObject({ format: "csv", mimetype: "text/csv", rows: 3 });
    expect(csv.text).toBe('id,full name,city,country\r\n1,Ann Lee,Zürich,CH\r\n2,"Bob ""Bobby"" Ray",Paris,CH\r\n3,"Cy, Jr.","Rome\nItaly",CH\r\n');
    const xml = await run("people.csv", fixture("people.csv"), mappings, schema, "xml");
    expect(xml.text).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n' +
        "<row><id>1</id><full_name>Ann Lee</full_name><city>Zürich</city><country>CH</country></row>\n" +
        '<row><id>2</id><full_name>Bob "Bobby" Ray</full_name><city>Paris</city><country>CH</country></row>\n' +
        "<row><id>3</id><full_name>Cy, Jr.</full_name><city>Rome\nItaly</city><country>CH</country></row>\n</rows>\n",
    );
  });

  test("a header-only file is a completed run with no rows", async () => {
    const { outcome, text } = await run("only.csv", "id,name\n");
    expect(outcome).toMatchObject({ ok: true, counts: { total: 0, valid: 0, invalid: 0 } });
    expect(text).toBe("[\n]\n");
  });
});

const ORDERS: SchemaRef = {
  id: "sch_orders",
  version: "1",
  definition: { type: "object", properties: { id: { type: "integer" }, amount: { type: "number" }, when: { type: "string", format: "date" } }, required: ["id", "amount"] },
};
const orderMappings = (validations: unknown) => ({
  fieldMappings: [
    { target: "id", source: "id" },
    { target: "amount", source: "amount", transform: "number" },
    { target: "when", source: "when", transform: "date" },
  ],
  validations,
});
// Input rows 2 and 4 are invalid.
const ORDERS_CSV = "id,amount,when\n1,10.5,2024-01-02\n2,1,234.5,2024-01-03\n3,7,2024-01-04\n4,,2024-02-30\n5,0.5,\n";

describe("what invalid rows do", () => {
  test("fail (the default): the run fails naming the first errors, and nothing is left at the processed key", async () => {
    const req = request(t, "orders.csv", orderMappings({}), ORDERS);
    await t.store.put(req.originalKey, ORDERS_CSV.replace("2,1,234.5", "2,abc"));
    await t.store.put(req.processedKey, "stale output of an earlier attempt");
    const outcome = await processFile(req, t.store);
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toBe(
      `2 invalid rows in the first 5 rows read, and mappings.validations.onInvalidRow is 'fail'. First errors: row 2 amount: transform 'number': "abc" is not a decimal number such as 1234.5 (no thousands separators); row 4 when: transform 'date': "2024-02-30" is not an ISO date (YYYY-MM-DD) or date-time; row 4 amount: is required. Fix the file, or set onInvalidRow to 'skip' or 'quarantine' to keep the valid rows.`,
    );
    expect(outcome.errors).toEqual([
      { inputRow: 2, field: "amount", message: `transform 'number': "abc" is not a decimal number such as 1234.5 (no thousands separators)` },
      { inputRow: 4, field: "when", message: `transform 'date': "2024-02-30" is not an ISO date (YYYY-MM-DD) or date-time` },
      { inputRow: 4, field: "amount", message: "is required" },
    ]);
    expect(outcome.processed).toBeNull();
    expect(await t.store.stat(req.processedKey)).toBeNull();
    expect(await t.store.stat(req.rejectsKey)).toBeNull();
  });

  test("skip: invalid rows are left out, reported, and listed in the rejects file as skipped", async () => {
    const { req, outcome, text, rejects } = await run("orders.csv", ORDERS_CSV.replace("2,1,234.5", "2,abc"), orderMappings({ onInvalidRow: "skip" }), ORDERS);
    expect(outcome).toMatchObject({ ok: true, counts: { total: 5, valid: 3, invalid: 2, skipped: 2, quarantined: 0 } });
    expect(outcome.rejects).toEqual({ key: req.rejectsKey, size: Buffer.byteLength(rejects!), rows: 2 });
    expect(outcome.errors.map((e) => [e.inputRow, e.field])).toEqual([[2, "amount"], [4, "when"], [4, "amount"]]);
    expect(jsonLines(text!)).toEqual([{ id: 1, amount: 10.5, when: "2024-01-02" }, { id: 3, amount: 7, when: "2024-01-04" }, { id: 5, amount: 0.5 }]);
    expect((jsonLines(rejects!) as Record<string, unknown>[]).map((r) => [r.inputRow, r.outcome, r.row])).toEqual([
      [2, "skipped", { id: "2", amount: "abc", when: "2024-01-03" }],
      [4, "skipped", { id: "4", amount: "", when: "2024-02-30" }],
    ]);
  });

  test("counts add up: every row is valid, skipped or quarantined, once", async () => {
    for (const onInvalidRow of ["skip", "quarantine"] as const) {
      const { outcome } = await run("orders.csv", ORDERS_CSV, orderMappings({ onInvalidRow }), ORDERS);
      const c = outcome.counts;
      expect(c.total).toBe(c.valid + c.skipped + c.quarantined);
      expect(c.invalid).toBe(c.skipped + c.quarantined);
      expect([c.skipped, c.quarantined]).toEqual(onInvalidRow === "skip" ? [2, 0] : [0, 2]);
    }
  });

  test("quarantine: invalid rows go to the rejects file with their errors and the row as read", async () => {
    const { req, outcome, text, rejects } = await run("orders.csv", ORDERS_CSV, orderMappings({ onInvalidRow: "quarantine" }), ORDERS);
    expect(outcome).toMatchObject({ ok: true, counts: { total: 5, valid: 3, invalid: 2, skipped: 0, quarantined: 2 } });
    expect(outcome.rejects).toEqual({ key: req.rejectsKey, size: Buffer.byteLength(rejects!), rows: 2 });
    expect(jsonLines(text!)).toHaveLength(3);
    expect(rejects).toBe(
      "[\n" +
        `{"inputRow":2,"outcome":"quarantined","errors":[{"field":"when","message":"transform 'date': \\"234.5\\" is not an ISO date (YYYY-MM-DD) or date-time"}],"row":{"id":"2","amount":"1","when":"234.5","column_4":"2024-01-03"}},\n` +
        `{"inputRow":4,"outcome":"quarantined","errors":[{"field":"when","message":"transform 'date': \\"2024-02-30\\" is not an ISO date (YYYY-MM-DD) or date-time"},{"field":"amount","message":"is required"}],"row":{"id":"4","amount":"","when":"2024-02-30"}}\n` +
        "]\n",
    );
  });

  test("the error budget: past maxInvalidRows the run fails", async () => {
    const { outcome, text } = await run("orders.csv", ORDERS_CSV.replace("2,1,234.5", "2,abc"), orderMappings({ onInvalidRow: "skip", maxInvalidRows: 1 }), ORDERS);
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toStartWith("More than 1 invalid row (the error budget mappings.validations.maxInvalidRows): 2 by row 4. First errors: row 2 amount:");
    expect(text).toBeNull();
    const within = await run("orders.csv", ORDERS_CSV.replace("2,1,234.5", "2,abc"), orderMappings({ onInvalidRow: "skip", maxInvalidRows: 2 }), ORDERS);
    expect(within.outcome.ok).toBe(true);
  });

  test("the error budget: past maxInvalidRatio the run fails, rejects included", async () => {
    const { req, outcome } = await run("orders.csv", ORDERS_CSV.replace("2,1,234.5", "2,abc"), orderMappings({ onInvalidRow: "quarantine", maxInvalidRatio: 0.25 }), ORDERS);
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toStartWith("2 invalid rows of 5 (40.0%) is more than the error budget mappings.validations.maxInvalidRatio 0.25.");
    expect(await t.store.stat(req.processedKey)).toBeNull();
    expect(await t.store.stat(req.rejectsKey)).toBeNull();
    const within = await run("orders.csv", ORDERS_CSV.replace("2,1,234.5", "2,abc"), orderMappings({ onInvalidRow: "quarantine", maxInvalidRatio: 0.4 }), ORDERS);
    expect(within.outcome).toMatchObject({ ok: true, counts: { quarantined: 2 } });
  });
});

describe("failures are outcomes, never exceptions", () => {
  test("unreadable input, a missing original, a bad mapping, a schema that cannot compile", async () => {
    const garbage = await run("x.csv", new Uint8Array([0, 1, 2, 3, 0, 0, 255, 254, 0, 9]));
    expect(garbage.outcome.ok).toBe(false);
    expect(garbage.outcome.errorMessage).toContain("binary data");

    const req = request(t, "gone.csv");
    const missing = await processFile(req, t.store);
    expect(missing.errorMessage).toBe(`The original file is missing from storage (${req.originalKey}); upload it again.`);

    const badStatic = await run("people.csv", fixture("people.csv"), { fieldMappings: [{ target: "id", value: "one", transform: "integer" }] });
    expect(badStatic.outcome.errorMessage).toStartWith("mappings.fieldMappings[0] (target 'id'): the static value cannot be used");

    const badSchema = await run("people.csv", fixture("people.csv"), {}, { id: "sch_broken", version: "1", definition: { type: "object", properties: { id: { $ref: "#/missing" } } } });
    expect(badSchema.outcome.errorMessage).toContain("the schema sch_broken cannot be compiled");
  });

  test("a storage failure midway is a failed outcome with the detail for the log", async () => {
    const req = request(t, "people.csv");
    await t.store.put(req.originalKey, fixture("people.csv"));
    // The real store, except that writing the processed file fails as a full disk would
    // (streamed with put, or written by the engine and taken with putFile).
    const local = t.store as ObjectStore & { putFile(key: string, path: string, opts: unknown): Promise<unknown> };
    const full = () => Promise.reject(new Error("ENOSPC: no space left on device"));
    const failing: ObjectStore = Object.create(t.store, {
      put: { value: (key: string, body: unknown, opts: unknown) => (key === req.processedKey ? full() : t.store.put(key, body as never, opts as never)) },
      putFile: { value: (key: string, path: string, opts: unknown) => (key === req.processedKey ? full() : local.putFile(key, path, opts)) },
    });
    const outcome = await processFile(req, failing);
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toContain("ENOSPC: no space left on device");
    expect(outcome.errorMessage).toContain("the run can be retried");
    expect(outcome.internalError).toContain("ENOSPC");
  });

  test("an aborted signal cancels the run and leaves nothing", async () => {
    const req = request(t, "many.csv", {}, loose);
    const rows = Array.from({ length: 50_000 }, (_, i) => `${i},name ${i}`).join("\n");
    await t.store.put(req.originalKey, gzipSync(`id,name\n${rows}\n`));
    const ac = new AbortController();
    ac.abort();
    const outcome = await processFile(req, t.store, ac.signal);
    expect(outcome.ok).toBe(false);
    expect(outcome.errorMessage).toStartWith("Processing was cancelled");
    expect(await t.store.stat(req.processedKey)).toBeNull();
  });
});
