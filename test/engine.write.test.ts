import { describe, expect, test } from "bun:test";
import { createWriter, csvWriter, jsonWriter, xmlWriter } from "../src/engine/write";
import { elementNames } from "../src/engine/write/xml";

function whole(w: ReturnType<typeof createWriter>, batches: Record<string, unknown>[][]): string {
  return w.begin() + batches.map((b) => w.rows(b)).join("") + w.end();
}

const rows = [
  { id: 1, name: "plain", note: 'says "hi", then\nleaves', tags: ["a", "b"] },
  { id: 2, name: " padded ", note: null },
  { id: 3, name: "Zoë & <Co>", note: "tab\there" },
];

describe("JSON writer (the processed-file layout)", () => {
  test("one object per line, in batches", () => {
    expect(whole(jsonWriter(), [rows.slice(0, 2), [], rows.slice(2)])).toBe(
      '[\n{"id":1,"name":"plain","note":"says \\"hi\\", then\\nleaves","tags":["a","b"]},\n{"id":2,"name":" padded ","note":null},\n{"id":3,"name":"Zoë & <Co>","note":"tab\\there"}\n]\n',
    );
    const text = whole(jsonWriter(), [rows]);
    expect(JSON.parse(text)).toEqual(rows);
    expect(text.split("\n").length).toBe(rows.length + 3);
  });

  test("no rows is an empty array on two lines", () => {
    expect(whole(jsonWriter(), [])).toBe("[\n]\n");
    expect(whole(jsonWriter(), [[]])).toBe("[\n]\n");
  });

  test("a count writes only the first rows of a reused buffer", () => {
    const w = jsonWriter();
    expect(w.begin() + w.rows(rows, 1) + w.end()).toBe('[\n{"id":1,"name":"plain","note":"says \\"hi\\", then\\nleaves","tags":["a","b"]}\n]\n');
  });
});

describe("CSV writer", () => {
  // papaparse also quotes a value with leading or trailing spaces, so readers that trim keep them.
  test("header from the columns, RFC 4180 quoting, CRLF", () => {
    const w = csvWriter(["id", "name", "note", "tags", "missing"]);
    expect(whole(w, [rows.slice(0, 1), rows.slice(1)])).toBe(
      'id,name,note,tags,missing\r\n1,plain,"says ""hi"", then\nleaves","[""a"",""b""]",\r\n2," padded ",,,\r\n3,Zoë & <Co>,tab\there,,\r\n',
    );
  });

  test("column names that need quoting, and no rows", () => {
    expect(whole(csvWriter(["a,b", 'say "x"', "plain"]), [])).toBe('"a,b","say ""x""",plain\r\n');
  });
});

describe("XML writer", () => {
  test("rows of elements, text escaped, missing values left out, null empty", () => {
    const w = xmlWriter(["id", "name", "note", "tags"]);
    expect(whole(w, [rows])).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n' +
        '<row><id>1</id><name>plain</name><note>says "hi", then\nleaves</note><tags>["a","b"]</tags></row>\n' +
        "<row><id>2</id><name> padded </name><note/></row>\n" +
        "<row><id>3</id><name>Zoë &amp; &lt;Co&gt;</name><note>tab\there</note></row>\n" +
        "</rows>\n",
    );
    expect(whole(xmlWriter(["a"]), [])).toBe('<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n</rows>\n');
  });

  test("element names are sanitised and kept unique; characters XML cannot carry are dropped", () => {
    expect(elementNames(["first name", "first_name", "1st", "xmlThing", "", "ok-1.2", "a<b>"])).toEqual([
      "first_name",
      "first_name_2",
      "_1st",
      "_xmlThing",
      "_",
      "ok-1.2",
      "a_b_",
    ]);
    const w = xmlWriter(["first name"]);
    expect(w.rows([{ "first name": "bell\u0007 and \ud800 lone" }])).toBe("<row><first_name>bell and  lone</first_name></row>\n");
  });

  test("createWriter picks by format with the right content type", () => {
    expect(createWriter("json", []).contentType).toBe("application/json");
    expect(createWriter("csv", ["a"]).contentType).toBe("text/csv");
    expect(createWriter("xml", ["a"]).contentType).toBe("application/xml");
  });
});
