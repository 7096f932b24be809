import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { processFile } from "../src/engine/process";
import type { SchemaRef } from "../src/engine/types";
import { jsonLines, localStore, request } from "./helpers/engine";
import { generatedCases } from "./fixtures/malformed/generated";

/**
 * Every case of the malformed corpus (test/fixtures/malformed/cases.json and
 * the generated big ones) through processFile on the local store: each ends in
 * a clear outcome, within its own timeout, and never throws.
 */
interface Case {
  file: string;
  options?: Record<string, unknown>;
  expect: { error: string } | { rows: number; columns?: string[] };
}

const DIR = `${import.meta.dir}/fixtures/malformed`;
const cases = JSON.parse(readFileSync(`${DIR}/cases.json`, "utf8")) as Case[];
const t = localStore();
afterAll(() => t.close());

/** A schema taking the expected columns (any value), so empty fieldMappings copy them by name. */
function schemaFor(columns: string[] = []): SchemaRef {
  // fromEntries makes `__proto__` an own property, as JSON.parse would for a stored schema.
  return { id: `sch_${columns.join("_") || "none"}`, version: "1", definition: { type: "object", properties: Object.fromEntries(columns.map((c) => [c, {}])) } };
}

describe("malformed corpus", () => {
  for (const c of cases) {
    test(
      `${c.file}: ${"error" in c.expect ? c.expect.error : `${c.expect.rows} rows`}`,
      async () => {
        const req = request(t, c.file, { options: c.options ?? {}, validations: { onInvalidRow: "skip" } }, schemaFor("columns" in c.expect ? c.expect.columns : []));
        await t.store.put(req.originalKey, readFileSync(`${DIR}/${c.file}`));
        const outcome = await processFile(req, t.store);
        if ("error" in c.expect) {
          expect(outcome.ok).toBe(false);
          expect(outcome.errorMessage).toContain(c.expect.error);
          expect(outcome.internalError).toBeUndefined();
          expect(await t.store.stat(req.processedKey)).toBeNull();
        } else {
          expect(outcome.errorMessage).toBeUndefined();
          expect(outcome.ok).toBe(true);
          expect(outcome.counts.total).toBe(c.expect.rows);
          const rows = jsonLines((await t.text(req.processedKey))!) as Record<string, unknown>[];
          expect(rows).toHaveLength(c.expect.rows);
          const columns = c.expect.columns;
          if (columns) for (const row of rows) for (const key of Object.keys(row)) expect(columns).toContain(key);
        }
      },
      20_000,
    );
  }

  test("a header named __proto__ is an ordinary column", async () => {
    const req = request(t, "proto-header.csv", {}, schemaFor(["__proto__", "constructor", "name"]));
    await t.store.put(req.originalKey, readFileSync(`${DIR}/proto-header.csv`));
    const outcome = await processFile(req, t.store);
    expect(outcome.ok).toBe(true);
    const text = (await t.text(req.processedKey))!;
    const row = jsonLines(text)[0] as Record<string, unknown>;
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(text.split("\n")[1]).toContain('"__proto__":');
  });
});

describe("generated big cases", () => {
  for (const g of generatedCases) {
    test(
      g.name,
      async () => {
        const req = request(t, g.filename, { options: g.options ?? {}, validations: { onInvalidRow: "skip" } }, schemaFor());
        await t.store.put(req.originalKey, g.source());
        const outcome = await processFile(req, t.store);
        await t.store.delete(req.originalKey);
        if ("error" in g.expect) {
          expect(outcome.ok).toBe(false);
          expect(outcome.errorMessage).toContain(g.expect.error);
          expect(await t.store.stat(req.processedKey)).toBeNull();
        } else {
          expect(outcome.ok).toBe(true);
          expect(outcome.counts.total).toBe(g.expect.rows);
        }
      },
      120_000,
    );
  }
});
