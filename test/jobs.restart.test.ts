import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqlite } from "../db/client";
import { createJobQueue } from "../src/jobs";
import type { JobContext, JobDefinition, JobQueue } from "../src/jobs/port";
import { createLogger } from "../src/logger";
import { freshDatabase } from "./helpers/database";
import { JobWorkerProcess, waitFor } from "./helpers/jobs";

/**
 * A single instance restarted after a crash resumes its interrupted jobs
 * within seconds, with the production lease (30 s): it knows its
 * predecessor is dead (docs/reliability.md). SQLite: the dead worker's pid
 * on this host no longer exists. Postgres: the dead pool's liveness lock is
 * free.
 */
const LEASE_MS = 30_000;
const dialects = process.env.TEST_DATABASE_URL ? (["sqlite", "pg"] as const) : (["sqlite"] as const);
const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function target(dialect: "sqlite" | "pg") {
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "fps-restart-"));
    const path = join(dir, "service.db");
    const db = openSqlite(path);
    cleanups.push(async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return { db, target: path };
  }
  const t = await freshDatabase();
  cleanups.push(t.drop);
  return { db: t.db, target: t.url! };
}

for (const dialect of dialects) {
  describe(`restart after a crash (${dialect})`, () => {
    test("kill -9 mid-job, then a new process: the job runs again within seconds, not after the 30 s lease", async () => {
      const { db, target: where } = await target(dialect);
      const prefix = `restart-${dialect}-${Date.now().toString(36)}-`;
      const child = await JobWorkerProcess.start({ dialect, target: where, prefix, worker: "first", concurrency: 1, leaseMs: LEASE_MS });
      const queue: JobQueue = await createJobQueue({ db, log: createLogger("silent"), concurrency: 1, leaseMs: LEASE_MS, pollMs: 1_000 });
      cleanups.push(() => queue.stop(1_000));
      await queue.add({ name: `${prefix}hang`, payload: { n: 1 } });
      const started = await child.waitForLine((l) => l.startsWith("started "), 20_000);
      await child.kill();
      const killedAt = performance.now();
      const calls: JobContext[] = [];
      const def: JobDefinition<unknown> = { name: `${prefix}hang`, parse: (p) => p, handle: async (_p, ctx) => void calls.push(ctx) };
      await queue.start([def]);
      await waitFor("the interrupted job to resume", () => calls.length === 1, 20_000);
      const ms = performance.now() - killedAt;
      expect(calls[0]).toMatchObject({ jobId: started.split(" ")[1], attempt: 2 });
      expect(ms).toBeLessThan(12_000);
      expect(queue.health().state).toBe("running");
    }, 60_000);
  });
}
