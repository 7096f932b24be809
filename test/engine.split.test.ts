import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { createEnginePool } from "../src/engine/pool";
import { processFile } from "../src/engine/process";
import { planSplit, processPart, processSplit, removeTemp } from "../src/engine/split";
import type { ProcessOutcome, ProcessRequest, SchemaRef } from "../src/engine/types";
import { localStore, request } from "./engine.support";

// One file read by several workers must give exactly what one worker gives.
const t = localStore();
afterAll(() => t.close());

const SCHEMA: SchemaRef = {
  id: "sch_split",
  version: "1",
  definition: {
    type: "object",
    properties: { id: { type: "integer" }, name: { type: "string" }, amount: { type: "number" }, note: { type: "string" } },
    required: ["id", "name", "amount"],
  },
};
const MAPPINGS = (onInvalidRow: string, extra: Record<string, unknown> = {}) => ({
  fieldMappings: [
    { source: "id", target: "id", transform: "integer" },
    { source: "name", target: "name", transform: "trim" },
    { source: "amount", target: "amount", transform: "number" },
    { source: "note", target: "note" },
  ],
  validations: { onInvalidRow, ...extra },
});

/** Rows with quoted delimiters, quotes and line breaks; `bad(i)` rows have an amount that is not a number. */
function csv(rows: number, bad: (i: number) => boolean = () => false, crlf = false): string {
  const nl = crlf ? "\r\n" : "\n";
  let out = `id,name,amount,note${nl}`;
  for (let i = 0; i < rows; i++) {
    const note = i % 7 === 0 ? `"line one${nl}line ""two"", with comma"` : i % 5 === 0 ? `"a, b"` : `plain ${i}`;
    out += `${i},  name ${i} ,${bad(i) ? "n/a" : `${i % 1000}.5`},${note}${nl}`;
  }
  return out;
}

let seq = 0;
async function stored(filename: string, body: string, mappings: unknown): Promise<ProcessRequest> {
  const req = request(t, filename, mappings, SCHEMA);
  req.runId = `${req.runId}_${++seq}`;
  await t.store.put(req.originalKey, body);
  return req;
}

/** Everything about a result that must not depend on how many workers read the file. */
async function result(req: ProcessRequest, o: ProcessOutcome) {
  return {
    ok: o.ok,
    errorMessage: o.errorMessage,
    counts: o.counts,
    errors: o.errors,
    input: o.input,
    processed: o.processed && { size: o.processed.size, rows: o.processed.rows },
    rejects: o.rejects && { size: o.rejects.size, rows: o.rejects.rows },
    processedText: await t.text(req.processedKey),
    rejectsText: await t.text(req.rejectsKey),
  };
}

/** The split path run in this thread: helpers' ranges first, then the lead. Null when the lead gives up. */
async function splitInProcess(req: ProcessRequest, parts: number) {
  const plan = await planSplit(req, t.store, { parts, minBytes: 0 });
  if (!plan) throw new Error("not split");
  const results = plan.parts.slice(1).map((p) => processPart(req, t.store, p));
  const outcome = await processSplit(req, t.store, plan, results, () => false);
  if (outcome === null) {
    // What the pool does once a lead gives up: helpers still reading may write their temp files after the lead's clean-up.
    await Promise.allSettled(results);
    await removeTemp(plan.parts);
  }
  return { plan, outcome };
}

/** The etag the local store has recorded beside `key` (its metadata file), waiting up to 5 s for one to appear. */
async function recordedEtag(key: string): Promise<string | undefined> {
  const h = new Bun.CryptoHasher("sha256").update(key).digest("hex");
  const path = join((t.store as unknown as { root: string }).root, ".fps", "meta", h.slice(0, 2), `${h}.json`);
  for (let i = 0; i < 100; i++) {
    const meta = (await Bun.file(path).json().catch(() => ({}))) as { etag?: string };
    if (meta.etag) return meta.etag;
    await Bun.sleep(50);
  }
  return undefined;
}

const tmpFiles = () => readdirSync(join((t.store as unknown as { root: string }).root, ".fps", "tmp")).filter((n) => n.endsWith(".rows") || n.endsWith(".rejects"));

async function single(filename: string, body: string, mappings: unknown) {
  const req = await stored(filename, body, mappings);
  return result(req, await processFile(req, t.store));
}

describe("one file on several workers", () => {
  test("CSV with quoted line breaks, LF and CRLF: the same bytes, counts and errors as one worker, in 2 and 3 parts", async () => {
    for (const crlf of [false, true]) {
      const body = csv(6000, (i) => i % 997 === 3, crlf);
      const expected = await single("q.csv", body, MAPPINGS("skip"));
      expect(expected.counts.invalid).toBeGreaterThan(3);
      for (const parts of [2, 3]) {
        const req = await stored("q.csv", body, MAPPINGS("skip"));
        const { plan, outcome } = await splitInProcess(req, parts);
        expect(plan.parts.length).toBe(parts);
        expect(outcome).not.toBeNull();
        expect(await result(req, outcome!)).toEqual(expected);
      }
    }
    expect(tmpFiles()).toEqual([]);
  });

  test("a cut right after a record with quoted line breaks is a true boundary; one inside a quoted field makes the lead read alone", async () => {
    // A record whose quoted note holds many line breaks, straddling the middle of the file.
    const before = csv(2500);
    const long = `9999,long,1.5,"${Array.from({ length: 30000 }, (_, i) => `text ${i}`).join("\n")}"\n`;
    const after = csv(2500).split("\n").slice(1).join("\n");
    const body = before + long + after;
    const req = await stored("long.csv", body, MAPPINGS("skip"));
    const plan = await planSplit(req, t.store, { parts: 2, minBytes: 0 });
    const cut = plan!.parts[1]!.start;
    const quoteStart = Buffer.byteLength(before) + long.indexOf('"');
    expect(cut).toBeGreaterThan(quoteStart);
    expect(cut).toBeLessThan(Buffer.byteLength(before + long));
    const { outcome } = await splitInProcess(req, 2);
    expect(outcome).toBeNull();
    expect(tmpFiles()).toEqual([]);

    // Through the pool, the fallback gives the single-worker result.
    const expected = await single("long.csv", body, MAPPINGS("skip"));
    const pool = createEnginePool({ size: 2, minSplitBytes: 0 });
    try {
      const req2 = await stored("long.csv", body, MAPPINGS("skip"));
      expect(await result(req2, await pool.process(req2))).toEqual(expected);
    } finally {
      await pool.close();
    }

    // Cuts that land on record ends right after quoted line breaks are kept.
    const dense = csv(6000).replace(/plain \d+/g, (m) => `"${m}\nmore"`);
    const expectedDense = await single("dense.csv", dense, MAPPINGS("skip"));
    const req3 = await stored("dense.csv", dense, MAPPINGS("skip"));
    const split3 = await splitInProcess(req3, 3);
    // Either a proven cut (same result) or a cut inside quotes (the lead reads alone): never a different result.
    if (split3.outcome) expect(await result(req3, split3.outcome)).toEqual(expectedDense);
  });

  test("quarantine: rejects from every part, row indexes renumbered, the first 20 errors in row order", async () => {
    const body = csv(6000, (i) => i % 150 === 1);
    const expected = await single("r.csv", body, MAPPINGS("quarantine"));
    expect(expected.counts.quarantined).toBe(40);
    expect(expected.errors.length).toBe(20);
    const req = await stored("r.csv", body, MAPPINGS("quarantine"));
    const { outcome } = await splitInProcess(req, 3);
    expect(outcome).not.toBeNull();
    const got = await result(req, outcome!);
    expect(got).toEqual(expected);
    // The last rejects come from the last part, numbered over the whole file.
    expect(got.rejectsText!.trimEnd().split("\n").at(-2)).toStartWith('{"rowIndex":5851,');
  });

  test("fail in a later part, and a maxInvalidRows budget exceeded only over all parts, fail as with one worker", async () => {
    const laterOnly = csv(6000, (i) => i === 5000);
    const cases: [string, unknown, string][] = [
      ["fail", MAPPINGS("fail"), laterOnly],
      ["budget", MAPPINGS("skip", { maxInvalidRows: 5 }), csv(6000, (i) => i % 1000 === 7)],
      ["ratio", MAPPINGS("quarantine", { maxInvalidRatio: 0.001 }), csv(6000, (i) => i % 900 === 7)],
    ];
    const pool = createEnginePool({ size: 2, minSplitBytes: 0 });
    try {
      for (const [name, mappings, body] of cases) {
        const expected = await single(`${name}.csv`, body, mappings);
        expect(expected.ok).toBe(false);
        const req = await stored(`${name}.csv`, body, mappings);
        expect((await splitInProcess(req, 2)).outcome).toBeNull();
        const req2 = await stored(`${name}.csv`, body, mappings);
        expect(await result(req2, await pool.process(req2))).toEqual(expected);
      }
    } finally {
      await pool.close();
    }
    expect(tmpFiles()).toEqual([]);
  });

  test("NDJSON splits at any line end; gzip, XLSX-like and small files are read by one worker", async () => {
    const lines = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ id: i, name: ` n ${i} `, amount: i % 300 === 0 ? "x" : i / 4, note: "a\nb" }));
    const body = `${lines.join("\n")}\n`;
    const expected = await single("d.ndjson", body, MAPPINGS("skip"));
    const req = await stored("d.ndjson", body, MAPPINGS("skip"));
    const { outcome } = await splitInProcess(req, 2);
    expect(await result(req, outcome!)).toEqual(expected);

    const small = await stored("s.csv", csv(10), MAPPINGS("skip"));
    expect(await planSplit(small, t.store, { parts: 2, minBytes: 0 })).toBeNull();
    const big = await stored("b.csv", csv(6000), MAPPINGS("skip"));
    expect(await planSplit(big, t.store, { parts: 2 })).toBeNull(); // under the default 8 MiB
    const gz = request(t, "g.csv.gz", MAPPINGS("skip"), SCHEMA);
    await t.store.put(gz.originalKey, Bun.gzipSync(Buffer.from(csv(6000))));
    expect(await planSplit(gz, t.store, { parts: 2, minBytes: 0 })).toBeNull();
    const json = await stored("j.json", `[${lines.join(",\n")}]`, MAPPINGS("skip"));
    expect(await planSplit(json, t.store, { parts: 2, minBytes: 0 })).toBeNull();
  });

  test("through the pool: the same result on two workers, and nothing left in the temp folder", async () => {
    const body = csv(8000, (i) => i % 333 === 0);
    const expected = await single("p.csv", body, MAPPINGS("quarantine"));
    const pool = createEnginePool({ size: 2, minSplitBytes: 0 });
    try {
      const req = await stored("p.csv", body, MAPPINGS("quarantine"));
      expect(await result(req, await pool.process(req))).toEqual(expected);
      expect(pool.stats()).toEqual({ workers: 2, busy: 0, queued: 0 });
      // The outputs' etags, the md5 of their bytes, are computed by the worker after it answered, before anyone asks.
      for (const key of [req.processedKey, req.rejectsKey]) {
        const md5 = new Bun.CryptoHasher("md5").update((await t.text(key))!).digest("hex");
        expect(await recordedEtag(key)).toBe(md5);
        expect((await t.store.stat(key))!.etag).toBe(md5);
      }
      // Two files at once: each is read by one worker (none held), both right.
      const [a, b] = [await stored("p.csv", body, MAPPINGS("quarantine")), await stored("p.csv", body, MAPPINGS("quarantine"))];
      const [oa, ob] = await Promise.all([pool.process(a), pool.process(b)]);
      expect(await result(a, oa)).toEqual(expected);
      expect(await result(b, ob)).toEqual(expected);
    } finally {
      await pool.close();
    }
    expect(tmpFiles()).toEqual([]);
  });

  test("through the pool: a lead that gives up reads alone, and no helper's temp file outlives the run", async () => {
    const body = csv(8000, (i) => i === 5);
    const expected = await single("q.csv", body, MAPPINGS("fail"));
    const pool = createEnginePool({ size: 2, minSplitBytes: 0 });
    try {
      for (let i = 0; i < 3; i++) {
        const req = await stored("q.csv", body, MAPPINGS("fail"));
        const outcome = await pool.process(req);
        expect(outcome.ok).toBe(false);
        expect(await result(req, outcome)).toEqual(expected);
      }
    } finally {
      await pool.close();
    }
    // Removal after a give-up is not awaited by the pool; give it a moment, then nothing may be left.
    for (let i = 0; i < 40 && tmpFiles().length > 0; i++) await Bun.sleep(25);
    expect(tmpFiles()).toEqual([]);
  });
});
