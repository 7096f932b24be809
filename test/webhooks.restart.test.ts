import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createService, type Service } from "../src/app";
import { parseConfig } from "../src/config";
import { createLogger } from "../src/logger";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { Receiver } from "./helpers/receiver";
import { createPipeline, startUpload, waitForRun } from "./helpers/runs";

// Harness start (a Postgres database, migrations, the job queue) can take seconds on a busy machine.
setDefaultTimeout(30_000);

/**
 * A restart while a delivery waits for its retry loses nothing: the next
 * attempt is a job in the database with its due time, not a timer in the
 * process that stopped. The second service is a new instance over the same
 * database, as after a deploy.
 */
const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCHEDULE: "1500ms,1500ms" };

let h: Harness;
let ws: TestWorkspace;
let second: Service | null = null;
const receiver = await Receiver.start();

beforeAll(async () => {
  h = await Harness.start({ env: ENV });
  ws = await h.workspace();
});

afterAll(async () => {
  receiver.stop();
  await second?.stop();
  await h.close();
});

test("a retry that was due after the service stopped is sent by the next instance, once", async () => {
  receiver.answer = (_, n) => (n === 1 ? { status: 503 } : { status: 200, body: "thanks" });
  const hook = await h.ok(ws, "POST", "/webhooks", { name: "Restart", url: receiver.url });
  const { pipeline } = await createPipeline(h, ws);
  await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: [hook.id] });
  const run = await startUpload(h, ws, pipeline.id);
  await waitForRun(h, ws, run.id, "completed");
  await waitFor("the first attempt", async () => (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${run.id}`)).data.length === 1);

  // The first instance stops while the retry waits (due 1.5 s after the failure).
  await h.service.stop();
  const config = parseConfig({ ...h.childEnv(), ...ENV });
  second = await createService({ config, clock: h.clock, db: h.svc.db, log: createLogger("silent") });

  let rows: any[] = [];
  await waitFor(
    "the retry by the second instance, recorded",
    async () => {
      rows = (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${run.id}`)).data.sort((a: any, b: any) => a.attempt - b.attempt);
      return rows.length === 2;
    },
    15_000,
  );
  expect(rows.map((d: any) => [d.attempt, d.statusCode, d.success])).toEqual([
    [1, 503, false],
    [2, 200, true],
  ]);
  expect(rows[1].responseExcerpt).toBe("thanks");
  expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
  await Bun.sleep(1700);
  expect(receiver.received).toHaveLength(2);
}, 30_000);
