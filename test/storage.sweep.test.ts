import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createService } from "../src/app";
import { parseConfig } from "../src/config";
import { jobDefinitions } from "../src/jobs/definitions";
import { createLogger } from "../src/logger";
import { STORAGE_SWEEP_JOB } from "../src/services/documents/sweep";
import { ORPHAN_AFTER_MS, sweepOrphanRuns } from "../src/services/run-path/ingest/sweep-orphans";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, startUpload } from "./helpers/runs";
import { startS3, type TestS3 } from "./helpers/s3";

/**
 * Nothing left behind: what a crash leaves in storage (the original of an
 * upload that never became a run, temp files of interrupted writes) is swept
 * at start-up and hourly, on the local store and on S3, and nothing live is
 * touched (a run's files, a folder written within the hour, a temp file
 * being written).
 */
const HOUR = 3600 * 1000;
const later = () => Date.now() + ORPHAN_AFTER_MS + 60_000;

/** The files a process that died between storing an upload and recording its run leaves. */
async function crashLeftover(h: Harness, ws: TestWorkspace, runId: string) {
  const base = `ws/${ws.workspaceId}/runs/${runId}`;
  await h.svc.storage.put(`${base}/original/orders.csv`, new TextEncoder().encode("SKU,Qty\na,1\n"));
  return base;
}
const present = async (h: Harness, base: string) => (await h.svc.storage.list(`${base}/`)).objects.length > 0;

function storeSuite(name: string, env: () => Record<string, string>) {
  describe(`runs never recorded (${name})`, () => {
    let h: Harness;
    let ws: TestWorkspace;
    let run: { id: string };

    beforeAll(async () => {
      h = await Harness.start({ startJobs: false, env: env() });
      ws = await h.workspace();
      const fx = await createPipeline(h, ws);
      // A run waiting for its job (no worker here): live, its original must stay.
      run = await startUpload(h, ws, fx.pipeline.id);
    }, 60_000);
    afterAll(() => h.close());

    test("an orphan older than the threshold is removed; a run's files and a fresh orphan stay", async () => {
      const orphan = await crashLeftover(h, ws, "run_crashed1");
      const runBase = `ws/${ws.workspaceId}/runs/${run.id}`;
      expect(await present(h, runBase)).toBe(true);
      // Within the hour: it may be an upload whose run is being recorded right now.
      expect(await sweepOrphanRuns(h.svc)).toBe(0);
      expect(await present(h, orphan)).toBe(true);
      // An hour on: the orphan goes, the run's files stay.
      expect(await sweepOrphanRuns(h.svc, { now: later() })).toBe(1);
      expect(await present(h, orphan)).toBe(false);
      expect(await present(h, runBase)).toBe(true);
      expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("pending");
    });

    test("the hourly storage.sweep job is scheduled on this store", () => {
      expect(jobDefinitions(h.svc).crons).toContainEqual({ name: STORAGE_SWEEP_JOB, cron: "23 * * * *", job: STORAGE_SWEEP_JOB });
    });
  });
}

storeSuite("local store", () => ({}));

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
}, 60_000);
afterAll(async () => {
  await s3.stop();
});
storeSuite("S3", () => s3.env);

describe("temp files of interrupted writes (local store)", () => {
  test("a service started on what a crash left removes an hour-old temp file and an old orphan at once, and leaves a temp file being written", async () => {
    // The data folder and database as a crash left them ...
    const h = await Harness.start({ startJobs: false });
    try {
      const ws = await h.workspace();
      const orphan = await crashLeftover(h, ws, "run_crashed3");
      const tmp = join(h.dataDir, "objects", ".fps", "tmp");
      mkdirSync(tmp, { recursive: true });
      const stale = join(tmp, "interrupted-write");
      const live = join(tmp, "write-in-progress");
      writeFileSync(stale, "x".repeat(1024));
      writeFileSync(live, "y".repeat(1024));
      const twoHoursAgo = new Date(Date.now() - 2 * HOUR);
      const originalFile = join(h.dataDir, "objects", orphan, "original", "orders.csv");
      expect(existsSync(originalFile)).toBe(true);
      for (const f of [stale, originalFile]) utimesSync(f, twoHoursAgo, twoHoursAgo);

      // ... and a service started on them, jobs running: the start-up sweep does not wait for the hour.
      const service = await createService({ config: parseConfig({ ...h.childEnv(), PUBLIC_URL: "http://localhost:3000" }), log: createLogger("silent") });
      try {
        const deadline = Date.now() + 20_000;
        while ((existsSync(stale) || existsSync(originalFile)) && Date.now() < deadline) await Bun.sleep(50);
        expect(existsSync(stale)).toBe(false);
        expect(existsSync(originalFile)).toBe(false);
        expect(existsSync(live)).toBe(true);
      } finally {
        await service.stop();
      }
    } finally {
      await h.close();
    }
  }, 60_000);
});
