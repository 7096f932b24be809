import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database as BunSqlite } from "bun:sqlite";
import { join } from "node:path";
import { testDialect } from "./helpers/database";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { createPipeline, type PipelineFixture, startUpload, waitForRun } from "./helpers/runs";
import { TcpProxy } from "./helpers/tcp-proxy";

/**
 * Processing survives database faults (docs/reliability.md): on Postgres
 * through a TCP proxy that refuses, resets and stalls connections; on
 * SQLite a database another process holds locked beyond the busy timeout.
 * Every run ends completed, without restarting the service.
 */
let h: Harness;
let ws: TestWorkspace;
let fx: PipelineFixture;
let proxy: TcpProxy | null = null;

const csv = (n: number) => `SKU,Qty,Name\nsku-${n},${n},Item ${n}\n`;

async function uploadMany(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await startUpload(h, ws, fx.pipeline.id, csv(i), `f${i}.csv`)).id);
  return ids;
}

async function allCompleted(ids: string[], timeoutMs: number): Promise<void> {
  for (const id of ids) {
    const run = await waitForRun(h, ws, id, ["completed", "failed"], { timeoutMs });
    expect(run.status, `run ${id}: ${JSON.stringify(run)}`).toBe("completed");
  }
}

beforeAll(async () => {
  if (testDialect() === "pg") {
    const admin = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await TcpProxy.start({ host: admin.hostname, port: Number(admin.port || 5432) });
  }
  h = await Harness.start({ dbVia: proxy ? (url) => proxy!.via(url) : undefined, logLevel: process.env.FAULT_LOG ?? "silent" });
  ws = await h.workspace();
  fx = await createPipeline(h, ws);
}, 60_000);

afterAll(async () => {
  proxy?.restore();
  await h.close();
  await proxy?.close();
}, 30_000);

if (testDialect() === "pg") {
  describe("Postgres behind a proxy that fails", () => {
    test("20 uploads, then 3 s of refused connections: every run completes with no restart, and the runner says so", async () => {
      const ids = await uploadMany(20);
      proxy!.refuse();
      await Bun.sleep(3_000);
      proxy!.restore();
      await allCompleted(ids, 60_000);
      await waitFor("the queue running again", () => h.svc.queue.health().state === "running", 30_000);
    }, 120_000);

    // Live connections reset while runs are processed is not here: it still ends the process now and then through
    // an unhandled socket error from a database client (docs/reliability.md, "Open"), which no test process survives.
    // bench/faults.ts runs that fault against the real service, which a supervisor restarts, and reports it.

    test("a stall of 3 s: every run completes once traffic passes again", async () => {
      const ids = await uploadMany(10);
      proxy!.stall();
      await Bun.sleep(3_000);
      proxy!.restore();
      await allCompleted(ids, 60_000);
    }, 120_000);
  });
} else {
  describe("SQLite held locked by another connection", () => {
    test("locked past the busy timeout while 20 runs are processed: outcomes are written once it is free, and every run completes", async () => {
      const ids = await uploadMany(20);
      const other = new BunSqlite(join(h.dataDir, "service.db"));
      other.exec("BEGIN EXCLUSIVE");
      await Bun.sleep(7_000);
      other.exec("COMMIT");
      other.close();
      await allCompleted(ids, 60_000);
      expect(h.svc.queue.health().state).toBe("running");
    }, 120_000);
  });
}
