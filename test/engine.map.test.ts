import { describe, expect, test } from "bun:test";
import type { RowError } from "../src/domain/runs";
import { compileMapping, MappingConfigError, schemaProperties } from "../src/engine/map";
import { RecordBuilder, RowNotes } from "../src/engine/parse/records";
import { describeFailure, FAIL, TRANSFORM_FNS } from "../src/engine/transforms";
import type { FieldMapping } from "../src/domain/mappings";

function mapOne(fieldMappings: FieldMapping[], record: Record<string, unknown>, props: string[] = []) {
  const errors: RowError[] = [];
  const row = compileMapping({ fieldMappings, schemaProperties: props }).map(record, 7, errors);
  return { row, errors };
}

describe("transforms", () => {
  const t = TRANSFORM_FNS;
  test("text transforms", () => {
    expect(t.trim("  a b \t")).toBe("a b");
    expect(t.trim("ab")).toBe("ab");
    expect(t.trim("\u00a0x\u00a0")).toBe("x");
    expect(t.uppercase("straße")).toBe("STRASSE");
    expect(t.uppercase("ABC-1")).toBe("ABC-1");
    expect(t.lowercase("ÄBC")).toBe("äbc");
    expect(t.lowercase(12)).toBe("12");
    expect(t.trim({ a: 1 })).toBe(FAIL);
    expect(t.string(12)).toBe("12");
    expect(t.string(true)).toBe("true");
    expect(t.string({ a: [1] })).toBe('{"a":[1]}');
  });

  test("number refuses thousands separators and words", () => {
    expect(t.number("1234.5")).toBe(1234.5);
    expect(t.number(" -12 ")).toBe(-12);
    expect(t.number("+.5")).toBe(0.5);
    expect(t.number("1e3")).toBe(1000);
    expect(t.number("007")).toBe(7);
    expect(t.number(3.25)).toBe(3.25);
    for (const bad of ["1,234.5", "abc", "0x1F", "Infinity", ".", "1.2.3", "12 34", true, Number.NaN, "1e999"]) expect(t.number(bad)).toBe(FAIL);
  });

  test("number gives exactly the double Number() gives, on the digit-by-digit path and past it", () => {
    // Plain decimals up to 15 characters are computed digit by digit; longer ones go through Number().
    const edges = ["0.1", "0.2", "0.3", "0.7", "1.005", "123456789012.34", "99999999999999.9", "999999999999999", "0.00000000000001", "5.", "9007199254740993", "1.0000000000000002", "0.30000000000000004"];
    for (const s of edges) expect(t.number(s)).toBe(Number(s));
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 200_000; i++) {
      const whole = String(Math.floor(random() * 10 ** Math.floor(random() * 12)));
      const places = Math.floor(random() * 7);
      const s = places ? `${whole}.${String(Math.floor(random() * 10 ** places)).padStart(places, "0")}` : whole;
      if (t.number(s) !== Number(s)) throw new Error(`number("${s}") is ${String(t.number(s))}, Number gives ${Number(s)}`);
    }
  });

  test("integer takes whole numbers only", () => {
    expect(t.integer("42")).toBe(42);
    expect(t.integer("-42")).toBe(-42);
    expect(t.integer("12.0")).toBe(12);
    expect(t.integer(7)).toBe(7);
    for (const bad of ["12.5", "1,000", "", "9007199254740993", 1.5, "x"]) expect(t.integer(bad)).toBe(FAIL);
  });

  test("boolean words in any case", () => {
    for (const yes of ["true", "TRUE", "Yes", "y", "1", " Y ", 1, true]) expect(t.boolean(yes)).toBe(true);
    for (const no of ["false", "No", "N", "0", 0, false]) expect(t.boolean(no)).toBe(false);
    for (const bad of ["maybe", "constructor", "2", 2, "truthy"]) expect(t.boolean(bad)).toBe(FAIL);
  });

  test("date gives YYYY-MM-DD and refuses impossible or ambiguous dates", () => {
    expect(t.date("2024-02-29")).toBe("2024-02-29");
    expect(t.date(" 2024-03-01 ")).toBe("2024-03-01");
    expect(t.date("2024-05-01T23:30:00-02:00")).toBe("2024-05-02");
    expect(t.date("2024-05-01 10:00")).toBe("2024-05-01");
    expect(t.date(new Date("2024-05-01T10:00:00Z"))).toBe("2024-05-01");
    for (const bad of ["2023-02-29", "2024-13-01", "2024-00-10", "01/02/2024", "2024-5-1", "yesterday", 20240501]) expect(t.date(bad)).toBe(FAIL);
  });

  test("datetime gives ISO 8601 in UTC", () => {
    expect(t.datetime("2024-05-01T09:30:00Z")).toBe("2024-05-01T09:30:00.000Z");
    expect(t.datetime("2024-05-01T09:30:00+02:00")).toBe("2024-05-01T07:30:00.000Z");
    expect(t.datetime("2024-05-01 09:30")).toBe("2024-05-01T09:30:00.000Z");
    expect(t.datetime("2024-05-01T09:30:00.123456+0530")).toBe("2024-05-01T04:00:00.123Z");
    expect(t.datetime("2024-05-01")).toBe("2024-05-01T00:00:00.000Z");
    for (const bad of ["2024-05-01T25:00", "2024-05-01T10:00+24:00", "May 1 2024", "1714555800"]) expect(t.datetime(bad)).toBe(FAIL);
  });

  test("failure messages name the transform and show the value", () => {
    expect(describeFailure("number", "1,234.5")).toBe(`transform 'number': "1,234.5" is not a decimal number such as 1234.5 (no thousands separators)`);
    expect(describeFailure("date", "x".repeat(100))).toContain(`"${"x".repeat(40)}…"`);
  });
});

describe("compileMapping", () => {
  test("sourced, static and aggregated mappings, in target order", () => {
    const { row, errors } = mapOne(
      [
        { target: "name", sources: ["first", "middle", "last"] },
        { target: "code", source: "c", transform: "uppercase" },
        { target: "origin", value: "upload" },
        { target: "place", sources: ["zip", "city"], delimiter: " - ", transform: "uppercase" },
      ],
      { first: "Ada", middle: "", last: "Lovelace", c: "ab", zip: null, city: "London" },
    );
    expect(errors).toEqual([]);
    expect(JSON.stringify(row)).toBe('{"name":"Ada Lovelace","code":"AB","origin":"upload","place":"LONDON"}');
  });

  test("empty values are absent; null is kept; transforms skip both", () => {
    const { row, errors } = mapOne(
      [
        { target: "a", source: "a", transform: "number" },
        { target: "b", source: "b", transform: "number" },
        { target: "c", source: "missing" },
        { target: "d", source: "d", transform: "trim" },
        { target: "e", sources: ["x", "y"] },
        { target: "f", value: "" },
      ],
      { a: "", b: null, d: "   ", x: "", y: null },
    );
    expect(errors).toEqual([]);
    expect(row).toEqual({ b: null });
    expect(Object.keys(row)).toEqual(["b"]);
  });

  test("a transform that cannot convert leaves the target out and reports the row", () => {
    const { row, errors } = mapOne(
      [
        { target: "amount", source: "amt", transform: "number" },
        { target: "ok", source: "flag", transform: "boolean" },
      ],
      { amt: "abc", flag: "y" },
    );
    expect(row).toEqual({ ok: true });
    expect(errors).toEqual([{ inputRow: 8, field: "amount", message: `transform 'number': "abc" is not a decimal number such as 1234.5 (no thousands separators)` }]);
  });

  test("a static value is transformed once, and one its transform refuses is a configuration error", () => {
    expect(mapOne([{ target: "n", value: "42", transform: "integer" }], {}).row).toEqual({ n: 42 });
    expect(() => compileMapping({ fieldMappings: [{ target: "n", value: "forty", transform: "integer" }], schemaProperties: [] })).toThrow(MappingConfigError);
    expect(() => compileMapping({ fieldMappings: [{ target: "n", value: "forty", transform: "integer" }], schemaProperties: [] })).toThrow(
      "mappings.fieldMappings[0] (target 'n')",
    );
  });

  test("empty fieldMappings take the schema's properties by name", () => {
    const props = schemaProperties({ type: "object", properties: { id: {}, name: {}, note: {} } });
    expect(props).toEqual(["id", "name", "note"]);
    const m = compileMapping({ fieldMappings: [], schemaProperties: props });
    expect(m.columns).toEqual(["id", "name", "note"]);
    expect(m.map({ name: "x", id: "1", other: "dropped" }, 0, [])).toEqual({ id: "1", name: "x" });
  });

  test("names are data, never code, and prototype names are plain columns", () => {
    const evil = `"]; throw new Error("injected"); //`;
    const { row } = mapOne(
      [
        { target: evil, source: evil },
        { target: "__proto__", source: "constructor" },
        { target: "toString", source: "toString" },
        { target: "hasOwn", source: "__proto__" },
      ],
      JSON.parse(`{${JSON.stringify(evil)}: "v", "__proto__": "p", "toString": "t"}`),
    );
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(row[evil]).toBe("v");
    expect(Object.hasOwn(row, "__proto__")).toBe(false); // record has no own `constructor`: absent
    expect(row["toString"]).toBe("t");
    expect(row.hasOwn).toBe("p");
    const { row: withProto } = mapOne([{ target: "__proto__", source: "a" }], { a: "x" });
    expect(Object.getPrototypeOf(withProto)).toBe(Object.prototype);
    expect(JSON.stringify(withProto)).toBe('{"__proto__":"x"}');
  });

  test("nested JSON values are copied; aggregated joins them as text", () => {
    const { row } = mapOne(
      [
        { target: "tags", source: "tags" },
        { target: "all", sources: ["n", "tags", "b"], delimiter: "|" },
        { target: "s", source: "tags", transform: "string" },
      ],
      { tags: ["a", "b"], n: 5, b: false },
    );
    expect(row).toEqual({ tags: ["a", "b"], all: '5|["a","b"]|false', s: '["a","b"]' });
  });
});

describe("mapping CSV field arrays (forFields)", () => {
  // The parser hands CSV/TSV rows to the mapping as field arrays; each must map exactly as the record RecordBuilder builds from it.
  const sameAsRecords = (columns: string[], rows: unknown[][], fieldMappings: FieldMapping[]) => {
    const notes = new RowNotes();
    const builder = new RecordBuilder(notes);
    builder.setColumns(columns);
    const mapping = compileMapping({ fieldMappings, schemaProperties: [] });
    const fromFields = mapping.forFields(columns);
    for (const [i, row] of rows.entries()) {
      const a: RowError[] = [];
      const b: RowError[] = [];
      const viaRecord = mapping.map(builder.build(row, i + 1, false), i, a);
      const viaFields = fromFields(row, i, b);
      expect({ row: viaFields, errors: b }).toEqual({ row: viaRecord, errors: a });
      expect(Object.keys(viaFields)).toEqual(Object.keys(viaRecord));
    }
  };

  test("short, long and ragged rows; extras under positional names, including one that a header column also has", () => {
    const columns = ["id", "name", "column_5", "constructor"];
    const rows = [
      ["1", "a", "x", "c"],
      ["2", "b"],
      ["3", "", "x", "c", "", "extra 5", "extra 6"],
      ["4", "d", "x", "c", "", ""],
      [],
      ["5", " e ", "", "", "e5"],
    ];
    sameAsRecords(columns, rows, [
      { source: "id", target: "id", transform: "integer" },
      { source: "name", target: "name", transform: "trim" },
      { source: "column_5", target: "five" },
      { source: "column_6", target: "six", transform: "uppercase" },
      { source: "column_2", target: "notPositional" },
      { source: "constructor", target: "ctor" },
      { source: "toString", target: "missing" },
      { sources: ["name", "column_6", "column_7", "nope"], target: "joined", delimiter: "|" },
      { target: "static", value: "s" },
    ]);
  });

  test("a __proto__ column and transform failures", () => {
    sameAsRecords(
      ["__proto__", "n"],
      [["p", "12"], ["q", "x"], ["r"], ["s", "1", "extra"]],
      [
        { source: "__proto__", target: "proto" },
        { source: "n", target: "n", transform: "integer" },
        { source: "column_3", target: "third" },
      ],
    );
  });
});
