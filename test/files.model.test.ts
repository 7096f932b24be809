import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { RowSplitter } from "../src/services/files/processed-file";
import { type Row, rowMatcher, searchRows, textOf } from "../src/services/files/row-search";
import { chunkedStream, processedJson } from "./helpers/fixture-runs";

const value = fc.oneof(
  fc.constantFrom("Bolt", "bolt kit", "NUT", "straße", "İstanbul", 'say "hi"', "a\\b", "x\ny", "ΟΔΟΣ", "日本"),
  fc.integer({ min: -20, max: 20 }),
  fc.constantFrom(1.5, 1e21, 5e-7, -0.25),
  fc.boolean(),
  fc.constant(null),
  fc.constant({ nested: "bolt" }),
);
const row = fc.dictionary(fc.constantFrom("sku", "name", "note", "bolt", 'q"k'), value, { maxKeys: 4 });
const term = fc.constantFrom("bolt", "BOLT", "t k", "1", "1.5", "e+21", "5e-7", "-", "true", "null", '"', 'say "', "\\", "\n", "ss", "i", "İ", "σ", "ς", "本", "nested", "sku", "{", ":", ",", "bolt kit");

describe("searchRows against parsing every row", () => {
  test("same hits, indexes and fields with the raw-line pre-check, whatever the chunking", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { maxLength: 25 }),
        fc.option(term, { nil: undefined }),
        fc.boolean(),
        fc.boolean(),
        fc.option(fc.constantFrom("name", "note", "bolt", 'q"k'), { nil: undefined }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 1, max: 8 }),
        async (rows, searchTerm, exactMatch, caseSensitive, fieldName, chunk, skip, take) => {
          const opts = { searchTerm, exactMatch, caseSensitive, fieldName };
          const m = rowMatcher(opts);
          const got: [number, Row, string[]][] = [];
          const total = await searchRows(chunkedStream(processedJson(rows), chunk), m, { skip, take, onHit: (i, r, f) => got.push([i, r, f]) });
          const want: [number, Row, string[]][] = [];
          rows.forEach((r, i) => {
            if (!searchTerm) return want.push([i, r, []]);
            const wanted = caseSensitive ? searchTerm : searchTerm.toLowerCase();
            const fields = Object.keys(r).filter((k) => {
              if (fieldName !== undefined && k !== fieldName) return false;
              const t = textOf(r[k]);
              if (t === null) return false;
              const v = caseSensitive ? t : t.toLowerCase();
              return exactMatch ? v === wanted : v.includes(wanted);
            });
            if (fields.length > 0) want.push([i, r, fields]);
          });
          expect(total).toBe(want.length);
          expect(got).toEqual(want.slice(skip, skip + take));
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe("RowSplitter", () => {
  test("finds every row with its offset, across any chunking", () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 20 }), fc.integer({ min: 1, max: 40 }), (rows, chunk) => {
        const bytes = new TextEncoder().encode(processedJson(rows));
        const seen: [number, number, unknown][] = [];
        const s = new RowSplitter((buf, start, end, i, offset) => {
          seen.push([i, offset, JSON.parse(new TextDecoder().decode(buf.subarray(start, end)))]);
          expect(new TextDecoder().decode(bytes.subarray(offset, offset + end - start))).toBe(new TextDecoder().decode(buf.subarray(start, end)));
        });
        for (let at = 0; at < bytes.length; at += chunk) s.push(bytes.slice(at, at + chunk));
        s.end();
        expect(seen.map((x) => x[2])).toEqual(rows);
        expect(seen.map((x) => x[0])).toEqual(rows.map((_, i) => i));
      }),
      { numRuns: 300 },
    );
  });
});
