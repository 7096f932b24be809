import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { createEnginePool } from "../src/engine/pool";
import { processFile } from "../src/engine/process";
import type { ProcessOutcome, ProcessRequest, SchemaRef } from "../src/engine/types";
import { localStore, request } from "./helpers/engine";

// An uploaded file processed while it arrives (EnginePool.speculate): its run's job must get exactly what reading
// the stored file gives, or the file is read as usual; nothing is left behind either way.
const t = localStore();
afterAll(() => t.close());

const SCHEMA: SchemaRef = {
  id: "sch_arriving",
  version: "1",
  definition: {
    type: "object",
    properties: { id: { type: "integer" }, name: { type: "string" }, amount: { type: "number" }, note: { type: "string" } },
    required: ["id", "name", "amount"],
  },
};
const MAPPINGS = (nameTransform = "trim") => ({
  fieldMappings: [
    { source: "id", target: "id", transform: "integer" },
    { source: "name", target: "name", transform: nameTransform },
    { source: "amount", target: "amount", transform: "number" },
    { source: "note", target: "note" },
  ],
  validations: { onInvalidRow: "quarantine" },
});

/** Rows with quoted line breaks and an invalid amount now and then. */
function csv(rows: number): string {
  let out = "id,name,amount,note\n";
  for (let i = 0; i < rows; i++) {
    const note = i % 7 === 0 ? `"line one\nline ""two"", with comma"` : `plain ${i}`;
    out += `${i},  name ${i} ,${i % 500 === 3 ? "n/a" : `${i % 1000}.5`},${note}\n`;
  }
  return out;
}
const BODY = csv(8000);
const BYTES = Buffer.byteLength(BODY);

const tmpFiles = () => readdirSync(join((t.store as unknown as { root: string }).root, ".fps", "tmp"));
async function noTempFilesSoon() {
  for (let i = 0; i < 40 && tmpFiles().length > 0; i++) await Bun.sleep(25);
  expect(tmpFiles()).toEqual([]);
}

/** The body in pieces with a pause between them, failing after `failAfter` bytes if given. */
async function* pieces(body: string, opts: { size?: number; pauseMs?: number; failAfter?: number; onPiece?: (sent: number) => void } = {}) {
  const bytes = Buffer.from(body);
  const size = opts.size ?? 9_000;
  for (let at = 0; at < bytes.length; at += size) {
    if (opts.failAfter !== undefined && at >= opts.failAfter) throw new Error("client went away");
    yield bytes.subarray(at, at + size);
    opts.onPiece?.(Math.min(bytes.length, at + size));
    await Bun.sleep(opts.pauseMs ?? 2);
  }
}

async function result(req: ProcessRequest, o: ProcessOutcome) {
  return {
    ok: o.ok,
    errorMessage: o.errorMessage,
    counts: o.counts,
    errors: o.errors,
    processed: o.processed && { size: o.processed.size, rows: o.processed.rows },
    rejects: o.rejects && { size: o.rejects.size, rows: o.rejects.rows },
    processedText: await t.text(req.processedKey),
    rejectsText: await t.text(req.rejectsKey),
  };
}

/** What one worker gives for `body` stored whole. */
async function expectedFor(body: string, mappings: unknown) {
  const req = request(t, "a.csv", mappings, SCHEMA);
  await t.store.put(req.originalKey, body);
  return result(req, await processFile(req, t.store));
}

const newPool = (extra: { adoptWithinMs?: number } = {}) => createEnginePool({ size: 2, minSplitBytes: 0, stripeBytes: 20_000, ...extra });

describe("a file processed while it arrives", () => {
  test("its run's job takes the work (streamed), and it is what reading the stored file gives", async () => {
    const expected = await expectedFor(BODY, MAPPINGS());
    expect(expected.counts.quarantined).toBeGreaterThan(10);
    const pool = newPool();
    try {
      const req = request(t, "a.csv", MAPPINGS(), SCHEMA);
      const early = pool.speculate!(req, BYTES);
      expect(early).not.toBeNull();
      let busyWhileArriving = 0;
      const info = await t.store.putArriving(req.originalKey, pieces(BODY, { onPiece: () => (busyWhileArriving = Math.max(busyWhileArriving, pool.stats().busy)) }), {
        observe: early!.observe,
      });
      // Both workers were held for it while it arrived.
      expect(busyWhileArriving).toBe(2);
      expect(info.size).toBe(BYTES);
      const outcome = await pool.process({ ...req, size: info.size });
      expect(outcome.streamed).toBe(true);
      expect(await result(req, outcome)).toEqual(expected);
      expect(pool.stats()).toEqual({ workers: 2, busy: 0, queued: 0 });
    } finally {
      await pool.close();
    }
    await noTempFilesSoon();
  });

  test("a job whose request changed meanwhile (the pipeline was edited) does not take it: the file is read as the run asks", async () => {
    const expected = await expectedFor(BODY, MAPPINGS("uppercase"));
    const pool = newPool();
    try {
      const req = request(t, "a.csv", MAPPINGS(), SCHEMA);
      const early = pool.speculate!(req, BYTES)!;
      await t.store.putArriving(req.originalKey, pieces(BODY), { observe: early.observe });
      const changed = { ...req, mappings: request(t, "a.csv", MAPPINGS("uppercase"), SCHEMA).mappings, size: BYTES };
      const outcome = await pool.process(changed);
      expect(outcome.streamed).toBeUndefined();
      expect(await result(changed, outcome)).toEqual(expected);
    } finally {
      await pool.close();
    }
    await noTempFilesSoon();
  });

  test("an upload that fails midway leaves nothing, and the workers are free for the next file", async () => {
    const pool = newPool();
    try {
      const req = request(t, "a.csv", MAPPINGS(), SCHEMA);
      const early = pool.speculate!(req, BYTES)!;
      const failed = await t.store.putArriving(req.originalKey, pieces(BODY, { failAfter: BYTES / 2 }), { observe: early.observe }).catch((e: Error) => e);
      expect(failed).toBeInstanceOf(Error);
      early.cancel(failed as Error);
      expect(await t.store.exists(req.originalKey)).toBe(false);
      for (let i = 0; i < 40 && pool.stats().busy > 0; i++) await Bun.sleep(25);
      expect(pool.stats().busy).toBe(0);
      // The next file gets both workers again.
      const expected = await expectedFor(BODY, MAPPINGS());
      const next = request(t, "a.csv", MAPPINGS(), SCHEMA);
      const early2 = pool.speculate!(next, BYTES);
      expect(early2).not.toBeNull();
      await t.store.putArriving(next.originalKey, pieces(BODY), { observe: early2!.observe });
      const outcome = await pool.process({ ...next, size: BYTES });
      expect(outcome.streamed).toBe(true);
      expect(await result(next, outcome)).toEqual(expected);
    } finally {
      await pool.close();
    }
    await noTempFilesSoon();
  });

  test("work no job takes in time is dropped; a job after that reads the file as usual", async () => {
    const expected = await expectedFor(BODY, MAPPINGS());
    const pool = newPool({ adoptWithinMs: 100 });
    try {
      const req = request(t, "a.csv", MAPPINGS(), SCHEMA);
      const early = pool.speculate!(req, BYTES)!;
      await t.store.putArriving(req.originalKey, pieces(BODY), { observe: early.observe });
      // Finished, waiting for its job: its output is in the temp folder until taken or dropped.
      for (let i = 0; i < 40 && pool.stats().busy > 0; i++) await Bun.sleep(25);
      expect(tmpFiles().length).toBeGreaterThan(0);
      await Bun.sleep(300);
      expect(tmpFiles()).toEqual([]);
      const outcome = await pool.process({ ...req, size: BYTES });
      expect(outcome.streamed).toBeUndefined();
      expect(await result(req, outcome)).toEqual(expected);
    } finally {
      await pool.close();
    }
  });

  test("a file still arriving steps aside for a file that is here: the stored one is not held up, and the arriving one is read after", async () => {
    const expected = await expectedFor(BODY, MAPPINGS());
    const pool = newPool();
    try {
      const slow = request(t, "a.csv", MAPPINGS(), SCHEMA);
      const early = pool.speculate!(slow, BYTES)!;
      let otherDoneAt = -1;
      let sent = 0;
      const arriving = t.store.putArriving(slow.originalKey, pieces(BODY, { pauseMs: 60, onPiece: (n) => (sent = n) }), { observe: early.observe });
      await Bun.sleep(150);
      const here = request(t, "a.csv", MAPPINGS(), SCHEMA);
      await t.store.put(here.originalKey, BODY);
      const hereOutcome = await pool.process({ ...here, size: BYTES });
      otherDoneAt = sent;
      expect(otherDoneAt).toBeLessThan(BYTES);
      expect(await result(here, hereOutcome)).toEqual(expected);
      await arriving;
      const outcome = await pool.process({ ...slow, size: BYTES });
      expect(outcome.streamed).toBeUndefined();
      expect(await result(slow, outcome)).toEqual(expected);
    } finally {
      await pool.close();
    }
    await noTempFilesSoon();
  });

  test("the pool declines: outside 8 MiB-256 MiB by default, while busy, on S3, for files it reads whole, for other output formats", async () => {
    const pool = createEnginePool({ size: 2 });
    try {
      const req = request(t, "a.csv", MAPPINGS(), SCHEMA);
      expect(pool.speculate!(req, 1024 * 1024)).toBeNull();
      expect(pool.speculate!(req, 300 * 1024 * 1024)).toBeNull();
      expect(pool.speculate!({ ...req, storage: { kind: "s3" } as never }, 20 * 1024 * 1024)).toBeNull();
      expect(pool.speculate!(request(t, "a.xlsx", MAPPINGS(), SCHEMA), 20 * 1024 * 1024)).toBeNull();
      expect(pool.speculate!(request(t, "a.csv", MAPPINGS(), SCHEMA, "csv"), 20 * 1024 * 1024)).toBeNull();
      const first = pool.speculate!(req, 20 * 1024 * 1024);
      expect(first).not.toBeNull();
      // One at a time: the workers are held for the first.
      expect(pool.speculate!(request(t, "b.csv", MAPPINGS(), SCHEMA), 20 * 1024 * 1024)).toBeNull();
      first!.cancel(new Error("not sent after all"));
    } finally {
      await pool.close();
    }
    await noTempFilesSoon();
  });
});
