import { afterAll, describe, expect, test } from "bun:test";
import { createEnginePool } from "../src/engine/pool";
import type { ProcessOutcome } from "../src/engine/types";
import { Harness } from "./helpers/harness";
import { jsonLines, localStore, request, type TestStore } from "./helpers/engine";

const t = localStore();
afterAll(() => t.close());

const SCHEMA = { id: "sch_pool", version: "1", definition: { type: "object", properties: { id: { type: "integer" }, name: { type: "string" } }, required: ["id"] } };

/** A CSV of `rows` rows, streamed into the store. */
async function* csv(rows: number): AsyncGenerator<Uint8Array> {
  yield Buffer.from("id,name\n");
  for (let i = 0; i < rows; i += 10_000) {
    let s = "";
    for (let j = i; j < Math.min(rows, i + 10_000); j++) s += `${j},name number ${j}\n`;
    yield Buffer.from(s);
  }
}

async function stored(store: TestStore, filename: string, rows: number) {
  const req = request(store, filename, {}, SCHEMA);
  await store.store.put(req.originalKey, csv(rows));
  return req;
}

describe("engine pool", () => {
  test("starts no worker until asked, then processes on a worker thread", async () => {
    const pool = createEnginePool({ size: 2, minSplitBytes: 1000 });
    try {
      expect(pool.stats()).toEqual({ workers: 0, busy: 0, queued: 0 });
      const req = await stored(t, "small.csv", 3);
      // A file known to be too small to split starts one worker.
      const outcome = await pool.process({ ...req, size: (await t.store.stat(req.originalKey))!.size });
      expect(outcome).toMatchObject({ ok: true, counts: { total: 3, valid: 3 } });
      expect(jsonLines((await t.text(req.processedKey))!)).toEqual([{ id: 0, name: "name number 0" }, { id: 1, name: "name number 1" }, { id: 2, name: "name number 2" }]);
      expect(pool.stats()).toEqual({ workers: 1, busy: 0, queued: 0 });
      // One large enough to be read in stripes starts the rest at once, so they load while it is planned.
      const larger = await stored(t, "larger.csv", 200);
      const size = (await t.store.stat(larger.originalKey))!.size;
      expect(size).toBeGreaterThan(1000);
      expect(await pool.process({ ...larger, size })).toMatchObject({ ok: true, counts: { total: 200 } });
      expect(pool.stats()).toEqual({ workers: 2, busy: 0, queued: 0 });
      // Without a size the file is read whole by one worker.
      expect(await pool.process(await stored(t, "unsized.csv", 200))).toMatchObject({ ok: true, counts: { total: 200 } });
    } finally {
      await pool.close();
    }
  });

  test("warm starts every worker ahead of the first file", async () => {
    const pool = createEnginePool({ size: 2 });
    try {
      pool.warm();
      expect(pool.stats()).toEqual({ workers: 2, busy: 0, queued: 0 });
      pool.warm();
      expect(pool.stats().workers).toBe(2);
      const req = await stored(t, "warm.csv", 2);
      expect(await pool.process({ ...req, size: 10 })).toMatchObject({ ok: true, counts: { total: 2 } });
      expect(pool.stats()).toEqual({ workers: 2, busy: 0, queued: 0 });
    } finally {
      await pool.close();
    }
  });

  test("queues requests while every worker is busy, and answers each", async () => {
    const pool = createEnginePool({ size: 1 });
    try {
      const reqs = await Promise.all([1, 2, 3].map((n) => stored(t, `q${n}.csv`, n * 10)));
      const pending = reqs.map((r) => pool.process(r));
      expect(pool.stats()).toEqual({ workers: 1, busy: 1, queued: 2 });
      const outcomes = await Promise.all(pending);
      expect(outcomes.map((o) => o.counts.total)).toEqual([10, 20, 30]);
      expect(pool.stats().workers).toBe(1);
    } finally {
      await pool.close();
    }
  });

  test("an abort terminates that worker, leaves nothing, and a fresh worker takes the next request", async () => {
    const pool = createEnginePool({ size: 1 });
    try {
      const big = await stored(t, "big.csv", 400_000);
      const queued = await stored(t, "after.csv", 5);
      const ac = new AbortController();
      const running = pool.process(big, ac.signal);
      const queuedAc = new AbortController();
      const dropped = pool.process(queued, queuedAc.signal);
      queuedAc.abort();
      await expect(dropped).rejects.toMatchObject({ name: "AbortError" });
      await Bun.sleep(50);
      ac.abort(new Error("shutting down"));
      await expect(running).rejects.toThrow("shutting down");
      expect(pool.stats()).toEqual({ workers: 0, busy: 0, queued: 0 });
      expect(await t.store.stat(big.processedKey)).toBeNull();
      const next = await pool.process(queued);
      expect(next.ok).toBe(true);
      expect(pool.stats().workers).toBe(1);
      // Already aborted: refused without a worker.
      await expect(pool.process(queued, AbortSignal.abort())).rejects.toMatchObject({ name: "AbortError" });
    } finally {
      await pool.close();
    }
  });

  test("a worker that dies fails its request with a message and is replaced", async () => {
    const pool = createEnginePool({ size: 1, workerUrl: new URL("./helpers/engine-crash-worker.ts", import.meta.url) });
    try {
      for (const name of ["exit.csv", "throw.csv"]) {
        const req = await stored(t, name, 2);
        const outcome = await pool.process(req);
        expect(outcome.ok).toBe(false);
        expect(outcome.errorMessage).toStartWith(`The engine worker stopped unexpectedly while processing ${name} (`);
        expect(outcome.errorMessage).toEndWith("); the run can be retried.");
        expect(await t.store.stat(req.processedKey)).toBeNull();
      }
      const ok = await pool.process(await stored(t, "fine.csv", 2));
      expect(ok).toMatchObject({ ok: true, counts: { total: 2 } });
      expect(pool.stats().workers).toBe(1);
    } finally {
      await pool.close();
    }
  });

  test("close rejects what is queued or running and refuses new work", async () => {
    const pool = createEnginePool({ size: 1 });
    const running = pool.process(await stored(t, "c1.csv", 200_000));
    const queued = pool.process(await stored(t, "c2.csv", 1));
    await pool.close();
    await expect(running).rejects.toThrow("engine pool closed");
    await expect(queued).rejects.toThrow("engine pool closed");
    await expect(pool.process(await stored(t, "c3.csv", 1))).rejects.toThrow("engine pool is closed");
    expect(pool.stats().workers).toBe(0);
  });
});

describe("the service stays responsive", () => {
  test("/healthz answers while a large file is processed", async () => {
    const h = await Harness.start({ startJobs: false });
    try {
      const store: TestStore = { store: h.svc.storage, config: h.svc.storageConfig, text: async () => null, close() {} };
      const req = await stored(store, "large.csv", 600_000);
      let settled = false;
      const processing = h.svc.engine.process(req).finally(() => (settled = true));
      // Let the worker start reading before asking.
      await Bun.sleep(100);
      const health = await h.request("GET", "/healthz");
      expect(health.status).toBe(200);
      expect(settled).toBe(false);
      const outcome: ProcessOutcome = await processing;
      expect(outcome).toMatchObject({ ok: true, counts: { total: 600_000, valid: 600_000 } });
    } finally {
      await h.close();
    }
  }, 60_000);
});
