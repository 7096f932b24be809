import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEnginePool } from "../src/engine/pool";
import type { RunEvent } from "../src/adapters/events/port";
import { jobDefinitions } from "../src/jobs/definitions";
import type { JobContext, JobDefinition } from "../src/jobs/port";
import { ingest } from "../src/services/run-path";
import { startRun } from "../src/services/run-path/ingest/start-run";
import { RUN_JOB, RUN_JOB_ATTEMPTS } from "../src/services/runs";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, type PipelineFixture, startUpload } from "./helpers/runs";

/** No worker claims jobs here: the test drives the run.process handler by hand, as the queue would. */
let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;
let job: JobDefinition<any>;

const jobContext = (attempt = 1): JobContext => ({
  jobId: `job_test_${attempt}`,
  attempt,
  maxAttempts: RUN_JOB_ATTEMPTS,
  signal: new AbortController().signal,
});
const handle = (payload: unknown, attempt = 1) => job.handle(job.parse(payload), jobContext(attempt));
const runRow = async (id: string) => (await h.svc.db.read.select().from(h.svc.db.t.pipelineRuns)).find((r) => r.id === id)!;
const runFiles = async (workspaceId: string, runId: string) =>
  (await h.svc.storage.list(`ws/${workspaceId}/runs/${runId}/`)).objects.map((o) => o.key.split(`/runs/${runId}/`)[1]).sort();

/** Collects this workspace's run events until `stop()`. */
function recordEvents(workspaceId: string) {
  const events: RunEvent[] = [];
  const abort = new AbortController();
  const sub = h.svc.events.subscribe({ workspaceId }, abort.signal);
  const done = (async () => {
    try {
      for await (const e of sub) events.push(e);
    } catch {}
  })();
  return {
    events,
    async stop() {
      await Bun.sleep(50);
      abort.abort();
      await sub.return?.();
      await done;
      return events;
    },
  };
}

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  ws = await h.workspace();
  fx = await createPipeline(h, ws);
  job = jobDefinitions(h.svc).definitions.find((d) => d.name === RUN_JOB)!;
});

afterAll(async () => {
  await h.close();
});

describe("the run.process job", () => {
  test("is registered, and refuses a payload that is not {runId}", () => {
    expect(job).toBeDefined();
    expect(() => job.parse({})).toThrow(/runId: is required/);
    expect(() => job.parse({ runId: 42 })).toThrow(/runId/);
    expect(() => job.parse("run_x")).toThrow();
    expect(job.parse({ runId: "run_x" })).toEqual({ runId: "run_x" });
  });

  test("an upload enqueues it in the same transaction: the run waits pending until a worker takes it", async () => {
    const run = await startUpload(h, ws, fx.pipeline.id);
    await Bun.sleep(50);
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("pending");
    expect(await runFiles(ws.workspaceId, run.id)).toEqual(["original/items.csv"]);
  });

  test("handled twice (one after the other, and twice at once): one output, one final status, one event per change", async () => {
    const rec = recordEvents(ws.workspaceId);
    const first = await startUpload(h, ws, fx.pipeline.id);
    await handle({ runId: first.id, attempt: 1 });
    const done = await h.ok(ws, "GET", `/pipeline-runs/${first.id}`);
    expect(done.status).toBe("completed");
    await handle({ runId: first.id, attempt: 1 }, 2);
    expect(await h.ok(ws, "GET", `/pipeline-runs/${first.id}`)).toEqual(done);
    expect(await runFiles(ws.workspaceId, first.id)).toEqual(["original/items.csv", "processed.json"]);

    const second = await startUpload(h, ws, fx.pipeline.id);
    await Promise.all([handle({ runId: second.id }), handle({ runId: second.id }, 2)]);
    const both = await h.ok(ws, "GET", `/pipeline-runs/${second.id}`);
    expect(both.status).toBe("completed");
    expect(both.metadata.rows.total).toBe(3);
    expect(await runFiles(ws.workspaceId, second.id)).toEqual(["original/items.csv", "processed.json"]);

    const events = await rec.stop();
    for (const id of [first.id, second.id]) {
      expect(events.filter((e) => e.runId === id).map((e) => e.status)).toEqual(["pending", "processing", "completed"]);
    }
    const list = await h.ok(ws, "GET", `/pipeline-runs/pipeline/${fx.pipeline.id}`);
    expect(list.data.filter((r: any) => r.id === first.id || r.id === second.id)).toHaveLength(2);
  });

  test("a job for a run that is gone, or left from an earlier attempt, does nothing", async () => {
    await handle({ runId: "run_01jzzzzzzzzzzzzzzzzzzzzzzz" });
    const run = await startUpload(h, ws, fx.pipeline.id);
    await handle({ runId: run.id, attempt: 7 });
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("pending");
  });

  test("a run acknowledged while pending stays acknowledged; the job leaves it", async () => {
    const run = await startUpload(h, ws, fx.pipeline.id);
    const acked = await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
    expect(acked.status).toBe("acknowledged");
    await handle({ runId: run.id, attempt: 1 });
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("acknowledged");
  });

  test("a pipeline deleted before processing fails the run with a message that says so", async () => {
    const p = await createPipeline(h, ws);
    const run = await startUpload(h, ws, p.pipeline.id);
    await h.ok(ws, "DELETE", `/pipelines/${p.pipeline.id}`);
    await handle({ runId: run.id, attempt: 1 });
    const failed = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
    expect(failed).toMatchObject({ status: "failed", isPipelineDeleted: true, pipelineName: "DELETED PIPELINE" });
    expect(failed.errorMessage).toMatch(/was deleted before the run was processed/);
  });

  test("given up: the run fails with a message a person can act on, and a retry processes it", async () => {
    const rec = recordEvents(ws.workspaceId);
    const run = await startUpload(h, ws, fx.pipeline.id);
    await job.onGiveUp!(job.parse({ runId: run.id, attempt: 1 }), new Error("engine worker exited (code 1)"));
    const failed = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
    expect(failed.status).toBe("failed");
    expect(failed.errorMessage).toBe(
      `processing failed after ${RUN_JOB_ATTEMPTS} attempts: engine worker exited (code 1); retry with POST /pipeline-runs/${run.id}/retry`,
    );
    // Giving up again (a duplicate call) changes nothing.
    await job.onGiveUp!(job.parse({ runId: run.id, attempt: 1 }), new Error("again"));
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).errorMessage).toBe(failed.errorMessage);

    const retried = await h.ok(ws, "POST", `/pipeline-runs/${run.id}/retry`);
    expect(retried.status).toBe("pending");
    // The first attempt's job, if it ever ran again, is stale.
    await handle({ runId: run.id, attempt: 1 });
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("pending");
    // Giving up the first attempt late does not touch the second.
    await job.onGiveUp!(job.parse({ runId: run.id, attempt: 1 }), new Error("late"));
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("pending");

    await handle({ runId: run.id, attempt: 2 });
    const done = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
    expect(done.status).toBe("completed");
    expect(done.metadata.attempts).toBe(2);
    expect(await runFiles(ws.workspaceId, run.id)).toEqual(["original/items.csv", "processed.json"]);
    const events = await rec.stop();
    expect(events.filter((e) => e.runId === run.id).map((e) => [e.previousStatus, e.status])).toEqual([
      [null, "pending"],
      ["pending", "failed"],
      ["failed", "pending"],
      ["pending", "processing"],
      ["processing", "completed"],
    ]);
  });
});

describe("when the engine itself fails", () => {
  /** A real pool whose worker thread dies on its first request: what a crash in a worker looks like to the service. */
  async function withCrashingEngine(fn: () => Promise<void>) {
    const dir = mkdtempSync(join(tmpdir(), "fps-crash-"));
    const script = join(dir, "crash-worker.ts");
    writeFileSync(script, "self.onmessage = () => { process.exit(3); };\n");
    const real = h.svc.engine;
    const crashing = createEnginePool({ size: 1, workerUrl: script });
    h.svc.engine = crashing;
    try {
      await fn();
    } finally {
      h.svc.engine = real;
      await crashing.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test("a worker that dies is not the file's fault: the job throws for a retry and the run stays processing; the next attempt completes it", async () => {
    const run = await startUpload(h, ws, fx.pipeline.id);
    await withCrashingEngine(async () => {
      await expect(handle({ runId: run.id, attempt: 1 })).rejects.toThrow(/stopped unexpectedly/);
    });
    const mid = await h.ok(ws, "GET", `/pipeline-runs/${run.id}`);
    expect(mid.status).toBe("processing");
    expect("errorMessage" in mid).toBe(false);
    await handle({ runId: run.id, attempt: 1 }, 2);
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("completed");
  });

  test("a job stopped by shutdown leaves the run processing for the next worker", async () => {
    const run = await startUpload(h, ws, fx.pipeline.id);
    const stop = new AbortController();
    stop.abort(new Error("queue stopping"));
    await expect(job.handle(job.parse({ runId: run.id, attempt: 1 }), { ...jobContext(), signal: stop.signal })).rejects.toThrow();
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("processing");
    await handle({ runId: run.id, attempt: 1 }, 2);
    expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("completed");
  });
});

describe("startRun", () => {
  test("an idempotency key returns the first run and stores the file once", async () => {
    const start = () =>
      startRun(h.svc, {
        workspaceId: ws.workspaceId,
        pipelineId: fx.pipeline.id,
        filename: "in/2026/items.csv",
        body: ITEMS_CSV,
        source: "sftp",
        path: "/inbound/2026/items.csv",
        idempotencyKey: "sftp:/inbound/2026/items.csv:1700000000",
      });
    const a = await start();
    const b = await start();
    expect(b.row.id).toBe(a.row.id);
    expect(a.row.filename).toBe("items.csv");
    expect(a.row.path).toBe("/inbound/2026/items.csv");
    const all = await h.ok(ws, "GET", "/pipeline-runs?limit=100");
    expect(all.data.filter((r: any) => r.path === "/inbound/2026/items.csv")).toHaveLength(1);
  });

  test("a body that fails while streaming leaves neither a run nor an object", async () => {
    const before = (await h.ok(ws, "GET", "/pipeline-runs")).pagination.total;
    async function* broken() {
      yield new TextEncoder().encode("SKU,Qty\n");
      throw new Error("connection reset by peer");
    }
    await expect(
      ingest(h.svc, { door: "upload", workspaceId: ws.workspaceId, pipelineId: fx.pipeline.id, filename: "x.csv", body: broken() }),
    ).rejects.toThrow(/connection reset/);
    expect((await h.ok(ws, "GET", "/pipeline-runs")).pagination.total).toBe(before);
    const keys = (await h.svc.storage.list(`ws/${ws.workspaceId}/runs/`)).objects.map((o) => o.key);
    const rows = await h.svc.db.read.select().from(h.svc.db.t.pipelineRuns);
    expect(keys.every((k) => rows.some((r) => k.includes(r.id)))).toBe(true);
  });
});
