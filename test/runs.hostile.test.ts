import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createEnginePool } from "../src/engine/pool";
import { jobDefinitions } from "../src/jobs/definitions";
import type { JobDefinition } from "../src/jobs/port";
import { RUN_JOB, RUN_JOB_ATTEMPTS } from "../src/services/runs";
import { gzipOf, hostileCases, plainRows } from "./fixtures/hostile/generate";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, type PipelineFixture, uploadFile } from "./helpers/runs";

/**
 * Hostile files as runs, on the database the suite runs on (SQLite, or
 * Postgres with TEST_DATABASE_URL): each fails on its first attempt, with a
 * message naming the limit and its setting and no invitation to retry, and
 * leaves no output. The run job is driven by hand, as the queue would, so
 * "at once" means the handler returned instead of throwing for a retry.
 */
const MiB = 1024 * 1024;
let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;
let anyValue: PipelineFixture;
let job: JobDefinition<any>;

const handle = (runId: string) =>
  job.handle(job.parse({ runId, attempt: 1 }), { jobId: `job_${runId}`, attempt: 1, maxAttempts: RUN_JOB_ATTEMPTS, signal: new AbortController().signal });

async function upload(name: string, content: Uint8Array | string, pipeline = fx) {
  const res = await uploadFile(h, ws, pipeline.pipeline.id, { name, content }, { type: "application/octet-stream" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as string;
}

/** One attempt of the run's job; the run must have failed by its end. */
async function failsAtOnce(runId: string) {
  await handle(runId);
  const run = await h.ok(ws, "GET", `/pipeline-runs/${runId}`);
  expect(run.status).toBe("failed");
  expect(run.errorMessage).not.toMatch(/can be retried|retry with|try again/i);
  const files = (await h.svc.storage.list(`ws/${ws.workspaceId}/runs/${runId}/`)).objects.map((o) => o.key);
  expect(files.some((k) => /processed|rejects/.test(k))).toBe(false);
  return run;
}

beforeAll(async () => {
  h = await Harness.start({ startJobs: false, env: { MAX_DECOMPRESSED_BYTES: String(16 * MiB) } });
  ws = await h.workspace();
  fx = await createPipeline(h, ws);
  anyValue = await createPipeline(h, ws, {
    definition: { type: "object", properties: { sku: { type: "string" }, qty: {} }, required: ["sku"] },
    mappings: { fieldMappings: [{ source: "SKU", target: "sku" }, { source: "Qty", target: "qty" }] },
  });
  job = jobDefinitions(h.svc).definitions.find((d) => d.name === RUN_JOB)!;
}, 60_000);

afterAll(async () => {
  await h.close();
});

describe("hostile files fail their run on the first attempt, naming the limit", () => {
  for (const file of ["bomb.csv.gz", "shared-string-bomb.xlsx", "deep.json", "deep.ndjson", "deep.xml"]) {
    const c = hostileCases.find((x) => x.filename === file)!;
    test(c.name, async () => {
      const run = await failsAtOnce(await upload(c.filename, await c.bytes()));
      expect(run.errorMessage).toContain(c.error);
    }, 60_000);
  }

  test("MAX_DECOMPRESSED_BYTES from the configuration reaches the engine: a 24 MiB gzip of ordinary rows fails past 16 MiB", async () => {
    const gz = await gzipOf("SKU,Qty,Name\n", plainRows(), 24 * MiB, 1);
    const run = await failsAtOnce(await upload("big.csv.gz", gz));
    expect(run.errorMessage).toContain("MAX_DECOMPRESSED_BYTES = 16777216");
  }, 60_000);

  test("a file under the limits is read as before", async () => {
    const gz = await gzipOf("SKU,Qty,Name\n", plainRows(), 2 * MiB, 1);
    const runId = await upload("fine.csv.gz", gz);
    await handle(runId);
    expect((await h.ok(ws, "GET", `/pipeline-runs/${runId}`)).status).toBe("completed");
  }, 60_000);

  test("a stack overflow in the engine (nesting past a raised depth limit) fails the run at once, without inviting a retry", async () => {
    const real = h.svc.engine;
    const lax = createEnginePool({ size: 1, limits: { maxDepth: 10_000_000 } });
    h.svc.engine = lax;
    try {
      const deep = 100_000;
      const runId = await upload("deep-values.ndjson", `{"SKU":"a","Qty":${"[".repeat(deep)}${"]".repeat(deep)}}\n`, anyValue);
      const run = await failsAtOnce(runId);
      expect(run.errorMessage).toContain("nested too deeply");
    } finally {
      h.svc.engine = real;
      await lax.close();
    }
  }, 60_000);
});
