import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createCaller } from "../trpc/router";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline } from "./helpers/runs";

setDefaultTimeout(120_000);

/**
 * Live progress: while a run is processing, its record carries
 * `metadata.progress` (rows read, bytes read of the total, rows per second),
 * refreshed once every PROGRESS_INTERVAL_MS (here 250 ms, so that the
 * test does not depend on how fast this machine reads), and the tRPC subscription (GraphQL's
 * runUpdated is the same service) pushes the run with it. Files large
 * enough to take a few seconds: one read whole by one worker thread
 * (a JSON array), one read in stripes by all of them (CSV).
 */
let h: Harness;
let ws: TestWorkspace;

const INTERVAL_MS = 250;

beforeAll(async () => {
  h = await Harness.start({ env: { PROGRESS_INTERVAL_MS: String(INTERVAL_MS) } });
  ws = await h.workspace();
});
afterAll(() => h.close());

type Any = any;

const SCHEMA = { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer" }, name: { type: "string" } }, required: ["sku"] };
const MAPPINGS = {
  fieldMappings: [
    { source: "sku", target: "sku", transform: "uppercase" },
    { source: "qty", target: "qty", transform: "integer" },
    { source: "name", target: "name", transform: "trim" },
  ],
};

/** A JSON array: read whole, by one worker (only CSV, TSV and NDJSON are read in stripes). */
function jsonArray(rows: number): string {
  const parts: string[] = [];
  for (let i = 0; i < rows; i++) parts.push(`{"sku":"s-${i}","qty":"${i % 97}","name":" item ${i} with a longer name "}`);
  return `[${parts.join(",\n")}]\n`;
}

function csv(rows: number): string {
  const parts = ["sku,qty,name"];
  for (let i = 0; i < rows; i++) parts.push(`s-${i},${i % 97}, item ${i} with a longer name `);
  return `${parts.join("\n")}\n`;
}

async function upload(pipelineId: string, name: string, content: string) {
  const form = new FormData();
  form.append("file", new Blob([content]), name);
  const res = await h.service.http.handle(
    new Request(`http://localhost/pipelines/${pipelineId}/runs`, { method: "POST", headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25" }, body: form }),
  );
  expect(res.status).toBe(200);
  return (await res.json()) as { id: string; size: number };
}

async function progressOf(format: "json" | "csv", name: string, content: string) {
  const { pipeline } = await createPipeline(h, ws, { definition: SCHEMA, mappings: { ...MAPPINGS, options: { format } } });
  const ac = new AbortController();
  const it = (await createCaller({ svc: h.svc, actor: ws.actor }, { signal: ac.signal }).runs.onUpdate({ pipelineId: pipeline.id })) as AsyncIterable<Any>;
  const pushed: Any[] = [];
  const ended = (async () => {
    for await (const u of it) {
      pushed.push(u.run);
      if (u.run && ["completed", "failed"].includes(u.run.status)) return;
    }
  })();
  const run = await upload(pipeline.id, name, content);
  // Read as a client polling REST would, meanwhile.
  const polled: Any[] = [];
  while (!pushed.some((r) => r && ["completed", "failed"].includes(r.status))) {
    const r = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
    if (r.status === "processing" && r.metadata.progress) polled.push(r.metadata.progress);
    await Bun.sleep(200);
  }
  await ended;
  ac.abort();
  const final = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
  return { run, pushed, polled, final };
}

function checkSamples(samples: Any[], size: number, totalRows: number) {
  expect(samples.length).toBeGreaterThanOrEqual(1);
  for (const p of samples) {
    expect(p.bytesTotal).toBe(size);
    expect(p.bytesRead).toBeLessThanOrEqual(size);
    expect(p.rowsRead).toBeLessThanOrEqual(totalRows);
    expect(typeof p.at).toBe("string");
  }
  // Counts only grow, and some sample (the first may come before the worker read anything) saw rows.
  for (let i = 1; i < samples.length; i++) {
    expect(samples[i].rowsRead).toBeGreaterThanOrEqual(samples[i - 1].rowsRead);
    expect(samples[i].bytesRead).toBeGreaterThanOrEqual(samples[i - 1].bytesRead);
  }
  const last = samples.at(-1);
  expect(last.rowsRead).toBeGreaterThan(0);
  expect(last.bytesRead).toBeGreaterThan(0);
  expect(last.rowsPerSecond).toBeGreaterThan(0);
}

describe("progress while a run is processing", () => {
  test("a file read whole by one worker: pushed and readable, once an interval, then gone when it ends", async () => {
    // Large enough to take well over 2 s on a quiet machine (about 1.6 s for 150,000 rows).
    const rows = 500_000;
    const { run, pushed, polled, final } = await progressOf("json", "big.json", jsonArray(rows));
    expect(final.status).toBe("completed");
    const processMs = final.metadata.timings.processMs as number;
    const samples = pushed.filter((r) => r?.status === "processing" && r.metadata.progress).map((r) => r.metadata.progress);
    // A sample an interval (the first one after an interval): never more; fewer only when a slow write (a busy machine) skips one.
    expect(processMs).toBeGreaterThan(4 * INTERVAL_MS);
    expect(samples.length).toBeGreaterThanOrEqual(Math.floor(processMs / (2 * INTERVAL_MS)));
    expect(samples.length).toBeLessThanOrEqual(Math.ceil(processMs / INTERVAL_MS) + 1);
    checkSamples(samples, run.size, rows);
    checkSamples(polled, run.size, rows);
    // The record keeps the outcome, not a stale progress.
    expect(final.metadata.progress).toBeUndefined();
    expect(final.metadata.rows.total).toBe(rows);
  });

  test("a file read in stripes by every worker: the same, counted as stripes come back", async () => {
    // The JavaScript row loop, so that the file takes seconds on a quiet machine (the native one read 1.5M rows in ~0.6 s).
    const rows = 6_000_000;
    const native = process.env.FPS_ENGINE_NATIVE;
    process.env.FPS_ENGINE_NATIVE = "0";
    const { run, pushed, final } = await progressOf("csv", "big.csv", csv(rows)).finally(() => {
      if (native === undefined) delete process.env.FPS_ENGINE_NATIVE;
      else process.env.FPS_ENGINE_NATIVE = native;
    });
    expect(final.status).toBe("completed");
    const samples = pushed.filter((r) => r?.status === "processing" && r.metadata.progress).map((r) => r.metadata.progress);
    // Long enough for several intervals even on a fast machine (1.2 s for 6M rows here, with 2 workers).
    expect(final.metadata.timings.processMs).toBeGreaterThan(3 * INTERVAL_MS);
    checkSamples(samples, run.size, rows);
    expect(final.metadata.rows.total).toBe(rows);
  });
});
