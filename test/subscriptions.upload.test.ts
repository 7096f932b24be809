import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { createClient } from "graphql-ws";
import { openPostgres } from "../db/client";
import type { GraphqlSocketData } from "../graphql/ws";
import { createEventBus } from "../src/adapters/events";
import { createLogger } from "../src/logger";
import { Reader } from "./helpers/events";
import type { Harness, TestWorkspace } from "./helpers/harness";
import { attached, closeLive, liveService, runEvent } from "./helpers/live";
import { createPipeline, ITEMS_CSV, startUpload } from "./helpers/runs";
import { testDialect } from "./helpers/database";

/**
 * End to end: a real upload processed by the job queue and the engine
 * reports its status changes to a graphql-ws subscriber; on Postgres, an
 * event published by another instance on the same database reaches it too.
 */

// biome-ignore lint/suspicious/noExplicitAny: results are checked member by member
type Any = any;

let h: Harness;
let server: Server<GraphqlSocketData>;
let ws: TestWorkspace;
let pipelineId = "";

const RUN_UPDATED = `subscription($pipelineId: ID) {
  runUpdated(pipelineId: $pipelineId) { event { id runId status previousStatus } run { id status filename metadata } }
}`;

beforeAll(async () => {
  ({ h, server } = await liveService({ startJobs: true }));
  ws = await h.workspace();
  pipelineId = (await createPipeline(h, ws)).pipeline.id;
});

afterAll(() => closeLive({ h, server }));

async function subscribe() {
  const client = createClient({ url: `ws://127.0.0.1:${server.port}/graphql`, webSocketImpl: WebSocket, connectionParams: { "x-api-key": ws.apiKey }, retryAttempts: 0 });
  const reader = new Reader<Any>(client.iterate({ query: RUN_UPDATED, variables: { pipelineId } }));
  // Markers go to a run id no upload has; they only prove the subscription is attached.
  await attached(reader, (id) => h.svc.events.publish(runEvent(ws, "run_marker", pipelineId, { id })), (r) => r.data?.runUpdated.event.id);
  return { client, reader };
}

describe("a real upload", () => {
  test("created, processing and completed arrive over graphql-ws, with the run as it is then", async () => {
    const { client, reader } = await subscribe();
    const run = await startUpload(h, ws, pipelineId, ITEMS_CSV, "live.csv");
    const updates: Any[] = [];
    while (updates.at(-1)?.event.status !== "completed") {
      const [r] = await reader.take(1, 20_000);
      expect(r.errors).toBeUndefined();
      updates.push(r.data.runUpdated);
    }
    expect(updates.map((u) => [u.event.runId, u.event.previousStatus, u.event.status])).toEqual([
      [run.id, null, "pending"],
      [run.id, "pending", "processing"],
      [run.id, "processing", "completed"],
    ]);
    const done = updates.at(-1).run;
    expect(done).toMatchObject({ id: run.id, status: "completed", filename: "live.csv" });
    expect(done.metadata.rows).toMatchObject({ total: 3, valid: 3, invalid: 0 });
    await client.dispose();
  });
});

if (testDialect() === "pg") {
  describe("Postgres: another instance", () => {
    test("an event published by another instance's bus on the same database reaches the subscriber", async () => {
      const { client, reader } = await subscribe();
      const url = (h.svc.db as { url?: string }).url!;
      const db = await openPostgres(url, { max: 2 });
      const bus = await createEventBus({ db, log: createLogger("silent") });
      const run = await startUpload(h, ws, pipelineId, ITEMS_CSV, "elsewhere.csv");
      const e = runEvent(ws, run.id, pipelineId, { status: "acknowledged", previousStatus: "completed" });
      await bus.publish(e);
      let got: Any = null;
      while (got?.event.id !== e.id) got = (await reader.take(1, 20_000))[0].data.runUpdated;
      expect(got.event).toMatchObject({ runId: run.id, status: "acknowledged" });
      expect(got.run.id).toBe(run.id);
      await client.dispose();
      await bus.close();
      await db.close();
    });
  });
}
