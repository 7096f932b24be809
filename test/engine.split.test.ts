import { afterAll, describe, expect, test } from "bun:test";
import { appendFileSync, closeSync, openSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createEnginePool } from "../src/engine/pool";
import { processFile } from "../src/engine/process";
import { planSplit, processStripe, readHead } from "../src/engine/split";
import { cutIn, type StripeTask } from "../src/engine/stripe-plan";
import { type GrowingFile, processStriped, renumberRejects, type StripeWorkers } from "../src/engine/stripes";
import type { ProcessOutcome, ProcessRequest, SchemaRef } from "../src/engine/types";
import { localStore, request } from "./helpers/engine";

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
  // As the runs service does: the pool reads a file in stripes only when it knows its size.
  req.size = Buffer.byteLength(body);
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

/** Stripes processed in this thread, `width` at a time; `delay(k)` holds stripe k back (results then arrive out of order). */
function inProcess(width: number, delay?: (index: number) => number) {
  const seen = { tasks: [] as StripeTask[], inFlight: 0, maxInFlight: 0 };
  const workers: StripeWorkers = {
    width,
    plan: async (req, source, headBytes) => planSplit(req, await readHead(req, t.store, source, headBytes)),
    async stripe(req, task, spare) {
      seen.tasks.push(task);
      seen.maxInFlight = Math.max(seen.maxInFlight, ++seen.inFlight);
      try {
        const ms = delay?.(task.index) ?? 0;
        if (ms > 0) await Bun.sleep(ms);
        return await processStripe(req, t.store, task, spare);
      } finally {
        seen.inFlight--;
      }
    },
  };
  return { workers, seen };
}

/** The striped read run in this thread; null when it gives up (the pool then reads the file on one worker). */
async function striped(req: ProcessRequest, opts: { width?: number; stripeBytes: number; window?: number; delay?: (index: number) => number }) {
  const { workers, seen } = inProcess(opts.width ?? 2, opts.delay);
  const size = (await t.store.stat(req.originalKey))!.size;
  const s = await processStriped(req, t.store, { kind: "store", size }, workers, { stripeBytes: opts.stripeBytes, window: opts.window });
  return { outcome: s ? await s.commit() : null, seen };
}

/** The etag the local store has recorded beside `key` (its metadata file), waiting up to `waitMs` for one to appear. */
async function recordedEtag(key: string, waitMs = 5000): Promise<string | undefined> {
  const h = new Bun.CryptoHasher("sha256").update(key).digest("hex");
  const path = join((t.store as unknown as { root: string }).root, ".fps", "meta", h.slice(0, 2), `${h}.json`);
  for (let i = 0; i <= waitMs / 50; i++) {
    const meta = (await Bun.file(path).json().catch(() => ({}))) as { etag?: string };
    if (meta.etag) return meta.etag;
    await Bun.sleep(50);
  }
  return undefined;
}

/** Files in the store's temp folder (output being written, or left behind). */
const tmpFiles = () => readdirSync(join((t.store as unknown as { root: string }).root, ".fps", "tmp"));

async function single(filename: string, body: string, mappings: unknown) {
  const req = await stored(filename, body, mappings);
  return result(req, await processFile(req, t.store));
}

describe("one file on several workers", () => {
  test("CSV with quoted line breaks, LF and CRLF: the same bytes, counts and errors as one worker, whatever the stripes and workers", async () => {
    for (const crlf of [false, true]) {
      const body = csv(6000, (i) => i % 997 === 3, crlf);
      const expected = await single("q.csv", body, MAPPINGS("skip"));
      expect(expected.counts.invalid).toBeGreaterThan(3);
      for (const [width, stripeBytes] of [[1, 20_000], [2, 20_000], [3, 7_000], [2, 200_000]] as const) {
        const req = await stored("q.csv", body, MAPPINGS("skip"));
        const { outcome, seen } = await striped(req, { width, stripeBytes });
        expect(outcome).not.toBeNull();
        expect(seen.tasks.length).toBeGreaterThanOrEqual(Math.floor(body.length / (stripeBytes + 1024)));
        expect(seen.maxInFlight).toBeLessThanOrEqual(width);
        // The ranges cover the file after the header without gaps: every start is the end of another range or the header's end.
        const ends = new Set(seen.tasks.map((x) => x.end));
        for (const task of seen.tasks) expect(task.start === seen.tasks[0]!.start || ends.has(task.start)).toBe(true);
        expect(Math.max(...ends)).toBe(Buffer.byteLength(body));
        expect(await result(req, outcome!)).toEqual(expected);
      }
    }
    expect(tmpFiles()).toEqual([]);
  });

  test("stripes that finish out of order are written in order; at most `window` are held beyond the last one written", async () => {
    const body = csv(6000, (i) => i % 401 === 0);
    const expected = await single("o.csv", body, MAPPINGS("quarantine"));
    const req = await stored("o.csv", body, MAPPINGS("quarantine"));
    // Even stripes are slow: the odd ones after them finish first and wait.
    const { outcome, seen } = await striped(req, { width: 3, stripeBytes: 9_000, window: 3, delay: (k) => (k % 2 === 0 ? 15 : 0) });
    expect(seen.tasks.length).toBeGreaterThan(20);
    expect(seen.maxInFlight).toBe(3);
    // Handed out in order, never more than the window ahead of the stripes written.
    expect(seen.tasks.map((x) => x.index)).toEqual(seen.tasks.map((_, i) => i));
    expect(await result(req, outcome!)).toEqual(expected);
  });

  test("the file's last stripes are a quarter of the size and go only to a worker with nothing outstanding", async () => {
    const body = csv(50_000, (i) => i % 997 === 3);
    const size = Buffer.byteLength(body);
    const stripeBytes = 300_000;
    expect(size).toBeGreaterThan(6 * stripeBytes);
    const expected = await single("t.csv", body, MAPPINGS("skip"));
    const req = await stored("t.csv", body, MAPPINGS("skip"));
    // Two workers holding up to two stripes each, as the pool has them; stripes out of turn are refused.
    const held = [0, 0];
    const tasks: { start: number; end: number; idleOnly: boolean; worker: number }[] = [];
    const workers: StripeWorkers = {
      width: 4,
      plan: async (r, source, headBytes) => planSplit(r, await readHead(r, t.store, source, headBytes)),
      hasIdle: () => held.includes(0),
      async stripe(r, task, spare, idleOnly) {
        const worker = held[0]! <= held[1]! ? 0 : 1;
        if (idleOnly ? held[worker] !== 0 : held[worker]! >= 2) throw new Error(`stripe ${task.index}: no worker for it`);
        held[worker]!++;
        tasks.push({ start: task.start, end: task.end, idleOnly: idleOnly === true, worker });
        try {
          await Bun.sleep(worker === 0 ? 1 : 4); // worker 1 is the slower one
          return await processStripe(r, t.store, task, spare);
        } finally {
          held[worker]!--;
        }
      },
    };
    const s = await processStriped(req, t.store, { kind: "store", size }, workers, { stripeBytes });
    expect(await result(req, await s!.commit())).toEqual(expected);
    // The file's last full stripe per worker ((width / 2) · stripeBytes) is cut in quarters.
    const tail = tasks.filter((x) => size - x.start <= 2 * stripeBytes);
    const body_ = tasks.filter((x) => size - x.start > 2 * stripeBytes);
    expect(tail.length).toBeGreaterThanOrEqual(7);
    for (const x of tail) expect(x.idleOnly).toBe(true);
    for (const x of tail.slice(0, -1)) expect(x.end - x.start).toBeLessThan(stripeBytes / 4 + 200);
    for (const x of body_) expect(x.idleOnly).toBe(false);
    for (const x of body_.slice(0, -1)) expect(x.end - x.start).toBeGreaterThanOrEqual(stripeBytes);
  });

  test("in the tail with nothing in flight and no worker left, the file is given up instead of waiting for a result that never comes", async () => {
    const body = csv(20_000);
    const req = await stored("gone.csv", body, MAPPINGS("skip"));
    let sent = 0;
    const workers: StripeWorkers = {
      width: 4,
      plan: async (r, source, headBytes) => planSplit(r, await readHead(r, t.store, source, headBytes)),
      // Every worker gone once the body is done: none is idle, and a stripe finds none.
      hasIdle: () => sent < 2,
      async stripe(r, task, spare) {
        if (++sent > 2) throw new Error("no worker left for the stripe");
        return processStripe(r, t.store, task, spare);
      },
    };
    const size = Buffer.byteLength(body);
    const s = await Promise.race([
      processStriped(req, t.store, { kind: "store", size }, workers, { stripeBytes: Math.floor(size / 3) }),
      Bun.sleep(5000).then(() => "hung" as const),
    ]);
    expect(s).toBeNull();
    expect(sent).toBeGreaterThan(2);
  });

  test("a cut inside a quoted field is repaired: that stripe is merged with the next and read again; past 32 merges the pool reads alone", async () => {
    // A record whose quoted note holds many line breaks (each line without quotes, so any cut there looks safe).
    const before = csv(2500);
    const long = `9999,long,1.5,"${Array.from({ length: 30000 }, (_, i) => `text ${i}`).join("\n")}"\n`;
    const after = csv(2500).split("\n").slice(1).join("\n");
    const body = before + long + after;
    const expected = await single("long.csv", body, MAPPINGS("skip"));
    const req = await stored("long.csv", body, MAPPINGS("skip"));
    const { outcome, seen } = await striped(req, { stripeBytes: Buffer.byteLength(before) + 1000 });
    // The first cut lands inside the quoted note; the stripe is read again over the next range, and then the next.
    const quoteStart = Buffer.byteLength(before) + long.indexOf('"');
    const first = seen.tasks.find((x) => x.index === 0)!;
    expect(first.end).toBeGreaterThan(quoteStart);
    expect(first.end).toBeLessThan(Buffer.byteLength(before + long));
    const redone = seen.tasks.filter((x) => x.start === first.start);
    expect(redone.length).toBeGreaterThan(1);
    expect(redone.at(-1)!.end).toBeGreaterThan(Buffer.byteLength(before + long));
    expect(await result(req, outcome!)).toEqual(expected);

    // Small stripes: the note spans far more than 32 of them, so the read gives up...
    const req2 = await stored("long.csv", body, MAPPINGS("skip"));
    expect((await striped(req2, { stripeBytes: 2000 })).outcome).toBeNull();
    expect(tmpFiles()).toEqual([]);
    // ...and through the pool the file is read by one worker, with the same result.
    const pool = createEnginePool({ size: 2, minSplitBytes: 0, stripeBytes: 2000 });
    try {
      const req3 = await stored("long.csv", body, MAPPINGS("skip"));
      expect(await result(req3, await pool.process(req3))).toEqual(expected);
    } finally {
      await pool.close();
    }

    // Quoted line breaks every few records, at many stripe sizes: never a different result.
    const dense = csv(6000).replace(/plain \d+/g, (m) => `"${m}\nmore"`);
    const expectedDense = await single("dense.csv", dense, MAPPINGS("skip"));
    for (const stripeBytes of [5_000, 13_000, 31_000]) {
      const req4 = await stored("dense.csv", dense, MAPPINGS("skip"));
      const split = await striped(req4, { width: 3, stripeBytes });
      expect(split.outcome).not.toBeNull();
      expect(await result(req4, split.outcome!)).toEqual(expectedDense);
    }
  });

  test("cuts avoid line ends next to a line with an odd number of quotes", () => {
    const bytes = (s: string) => new TextEncoder().encode(s);
    const q = '"'.charCodeAt(0);
    // Mid-record start; `"x` opens a quoted field that ends on the next line: the line ends next to those lines are skipped.
    const w = bytes('tail\n1,"x\ny",2\n3,a\n4,b\n');
    expect(cutIn(w, "\n", q)).toBe('tail\n1,"x\ny",2\n3,a\n'.length);
    // No line with an even count on both sides: the first line end.
    expect(cutIn(bytes('a"\nb"\n'), "\n", q)).toBe(3);
    // CRLF: only \r\n ends a line; NDJSON (no quote): the first line end.
    expect(cutIn(bytes("ab\ncd\r\nef\r\ngh\r\nij"), "\r\n", q)).toBe("ab\ncd\r\nef\r\n".length);
    expect(cutIn(bytes('{"a":"\\""}\n{}\n'), "\n", null)).toBe('{"a":"\\""}\n'.length);
    expect(cutIn(bytes("no line end"), "\n", q)).toBe(-1);
  });

  test("quarantine: rejects from every stripe, row indexes renumbered, the first 20 errors in row order", async () => {
    const body = csv(6000, (i) => i % 150 === 1);
    const expected = await single("r.csv", body, MAPPINGS("quarantine"));
    expect(expected.counts.quarantined).toBe(40);
    expect(expected.errors.length).toBe(20);
    const req = await stored("r.csv", body, MAPPINGS("quarantine"));
    const { outcome, seen } = await striped(req, { width: 3, stripeBytes: 30_000 });
    expect(seen.tasks.length).toBeGreaterThan(5);
    expect(outcome).not.toBeNull();
    const got = await result(req, outcome!);
    expect(got).toEqual(expected);
    // The last rejects come from the last stripe, numbered over the whole file.
    expect(got.rejectsText!.trimEnd().split("\n").at(-2)).toStartWith('{"inputRow":5852,');
    expect(renumberRejects('{"inputRow":1,"errors":[]},\n{"inputRow":12,"errors":[]}', 100)).toBe('{"inputRow":101,"errors":[]},\n{"inputRow":112,"errors":[]}');
  });

  test("fail in a later stripe, and budgets exceeded only over all stripes, give up; the pool then fails as one worker does", async () => {
    const laterOnly = csv(6000, (i) => i === 5000);
    const cases: [string, unknown, string][] = [
      ["fail", MAPPINGS("fail"), laterOnly],
      ["budget", MAPPINGS("skip", { maxInvalidRows: 5 }), csv(6000, (i) => i % 1000 === 7)],
      ["ratio", MAPPINGS("quarantine", { maxInvalidRatio: 0.001 }), csv(6000, (i) => i % 900 === 7)],
    ];
    const pool = createEnginePool({ size: 2, minSplitBytes: 0, stripeBytes: 40_000 });
    try {
      for (const [name, mappings, body] of cases) {
        const expected = await single(`${name}.csv`, body, mappings);
        expect(expected.ok).toBe(false);
        const req = await stored(`${name}.csv`, body, mappings);
        expect((await striped(req, { stripeBytes: 40_000 })).outcome).toBeNull();
        const req2 = await stored(`${name}.csv`, body, mappings);
        expect(await result(req2, await pool.process(req2))).toEqual(expected);
      }
    } finally {
      await pool.close();
    }
    expect(tmpFiles()).toEqual([]);
  });

  test("NDJSON splits at any line end; gzip, JSON and header-only files are not striped", async () => {
    const lines = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ id: i, name: ` n ${i} `, amount: i % 300 === 0 ? "x" : i / 4, note: "a\nb" }));
    const body = `${lines.join("\n")}\n`;
    const expected = await single("d.ndjson", body, MAPPINGS("skip"));
    const req = await stored("d.ndjson", body, MAPPINGS("skip"));
    const { outcome } = await striped(req, { stripeBytes: 25_000 });
    expect(await result(req, outcome!)).toEqual(expected);

    const head = async (r: ProcessRequest) => readHead(r, t.store, { kind: "store" }, 65536);
    const gz = request(t, "g.csv.gz", MAPPINGS("skip"), SCHEMA);
    await t.store.put(gz.originalKey, Bun.gzipSync(Buffer.from(csv(6000))));
    expect(await planSplit(gz, await head(gz))).toBeNull();
    const json = await stored("j.json", `[${lines.join(",\n")}]`, MAPPINGS("skip"));
    expect(await planSplit(json, await head(json))).toBeNull();
    const headerOnly = await stored("h.csv", "id,name,amount,note\n", MAPPINGS("skip"));
    expect((await striped(headerOnly, { stripeBytes: 1000 })).outcome).toBeNull();
  });

  test("bytes still arriving: stripes go out as their bytes and their end's line are there; a write that fails gives up", async () => {
    const body = Buffer.from(csv(6000, (i) => i % 700 === 5));
    const expected = await single("g.csv", body.toString(), MAPPINGS("quarantine"));
    for (const outcomeOf of ["complete", "fail"] as const) {
      const req = request(t, "g.csv", MAPPINGS("quarantine"), SCHEMA);
      const path = join((t.store as unknown as { root: string }).root, ".fps", "tmp", `growing-${req.runId}`);
      writeFileSync(path, "");
      const fd = openSync(path, "r");
      let available = 0;
      let size: number | null = null;
      let failed: Error | null = null;
      let wake = Promise.withResolvers<void>();
      const file: GrowingFile = {
        fd,
        get available() {
          return available;
        },
        get size() {
          return size;
        },
        get failed() {
          return failed;
        },
        changed: () => wake.promise,
      };
      const { workers, seen } = inProcess(2);
      const running = processStriped(req, t.store, { kind: "growing", file }, workers, { stripeBytes: 20_000 });
      // The file arrives in pieces; no stripe may reach past what is there.
      const piece = 17_000;
      for (let at = 0; at < body.length; at += piece) {
        if (outcomeOf === "fail" && at > body.length / 2) {
          failed = new Error("client went away");
          break;
        }
        appendFileSync(path, body.subarray(at, at + piece));
        available = Math.min(body.length, at + piece);
        const w = wake;
        wake = Promise.withResolvers<void>();
        w.resolve();
        await Bun.sleep(5);
        for (const task of seen.tasks) expect(task.end).toBeLessThanOrEqual(available);
      }
      if (outcomeOf === "complete") size = body.length;
      wake.resolve();
      const s = await running;
      closeSync(fd);
      if (outcomeOf === "fail") {
        expect(s).toBeNull();
      } else {
        expect(seen.tasks.length).toBeGreaterThan(10);
        // Nothing is at the output keys before commit.
        expect(await t.store.exists(req.processedKey)).toBe(false);
        await t.store.put(req.originalKey, body);
        expect(await result(req, await s!.commit())).toEqual(expected);
      }
      rmSync(path);
    }
    expect(tmpFiles()).toEqual([]);
  });

  test("through the pool: the same result on two workers, etags the md5 of the bytes when asked, nothing left in the temp folder", async () => {
    const body = csv(8000, (i) => i % 333 === 0);
    const expected = await single("p.csv", body, MAPPINGS("quarantine"));
    const pool = createEnginePool({ size: 2, minSplitBytes: 0, stripeBytes: 30_000 });
    try {
      const req = await stored("p.csv", body, MAPPINGS("quarantine"));
      expect(await result(req, await pool.process(req))).toEqual(expected);
      expect(pool.stats()).toEqual({ workers: 2, busy: 0, queued: 0 });
      // The outputs' etags are not computed while the run waits: the first to ask gets the md5 of the bytes, and it is kept.
      for (const key of [req.processedKey, req.rejectsKey]) {
        const md5 = new Bun.CryptoHasher("md5").update((await t.text(key))!).digest("hex");
        expect(await recordedEtag(key, 0)).toBeUndefined();
        expect((await t.store.stat(key))!.etag).toBe(md5);
        expect(await recordedEtag(key, 0)).toBe(md5);
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

  test("through the pool: a read that gives up is read alone, and nothing outlives the run in the temp folder", async () => {
    const body = csv(8000, (i) => i === 5);
    const expected = await single("q.csv", body, MAPPINGS("fail"));
    const pool = createEnginePool({ size: 2, minSplitBytes: 0, stripeBytes: 30_000 });
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
    expect(tmpFiles()).toEqual([]);
  });
});

