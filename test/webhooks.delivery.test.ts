import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHmac } from "node:crypto";
import { Webhook as Verifier } from "standardwebhooks";
import { newId } from "../src/domain/ids";
import { RUN_EVENT_JOB, type RunEventPayload } from "../src/services/run-path/announce/run-events";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { Receiver } from "./helpers/receiver";
import { createPipeline, startUpload, waitForRun } from "./helpers/runs";

// Harness start (a Postgres database, migrations, the job queue) can take seconds on a busy machine.
setDefaultTimeout(30_000);

/**
 * Delivery of run events to webhooks, against local receivers: signing as a
 * receiver checks it (the standardwebhooks package), retries on the
 * schedule and after Retry-After, timeouts, the delivery log, redelivery.
 * The retry schedule is tens of milliseconds here (production: seconds to
 * hours). The service clock is a ManualClock set once to the wall clock,
 * so times recorded on deliveries are exact (nextAttemptAt = createdAt +
 * the delay) and signatures are recent enough for the verifier.
 */
const SCHEDULE = [100, 200, 400, 800, 1600];
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_SCHEDULE: SCHEDULE.map((ms) => `${ms}ms`).join(","),
  WEBHOOK_TIMEOUT_MS: "500",
  WEBHOOK_RETRY_AFTER_MAX_SECONDS: "2",
};

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await Harness.start({ env: ENV });
  h.clock.set(new Date(Math.floor(Date.now() / 1000) * 1000));
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
});

afterAll(async () => {
  for (const r of receivers) r.stop();
  await h.close();
});

async function receiver(): Promise<Receiver> {
  const r = await Receiver.start();
  receivers.push(r);
  return r;
}

/** A pipeline with the given webhooks linked; answers the pipeline and each webhook with its secret. */
async function pipelineWith(hooks: { url: string; [k: string]: unknown }[]) {
  const created = [];
  for (const [i, body] of hooks.entries()) created.push(await h.ok(ws, "POST", "/webhooks", { name: `Hook ${i}`, ...body }));
  const { pipeline } = await createPipeline(h, ws);
  await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: created.map((c) => c.id) });
  return { pipeline, hooks: created as { id: string; secret: string; url: string }[] };
}

async function completedRun(pipelineId: string) {
  const run = await startUpload(h, ws, pipelineId);
  await waitForRun(h, ws, run.id, "completed");
  return run as { id: string };
}

async function deliveries(query: string, as: TestWorkspace = ws) {
  return (await h.ok(as, "GET", `/webhooks/deliveries?limit=100&${query}`)) as { data: any[]; pagination: any };
}

async function waitDeliveries(query: string, done: (rows: any[]) => boolean, timeoutMs = 10_000): Promise<any[]> {
  let rows: any[] = [];
  await waitFor(
    `deliveries ${query}`,
    async () => {
      rows = (await deliveries(query)).data;
      return done(rows);
    },
    timeoutMs,
  );
  return rows.sort((a, b) => a.attempt - b.attempt);
}

const ms = (iso: string) => new Date(iso).getTime();

describe("a run event reaches the linked webhook, signed", () => {
  test("the body carries the event id, type, timestamp and the run; the standardwebhooks verifier accepts it", async () => {
    const r = await receiver();
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    await waitFor("one request", () => r.received.length === 1);
    const req = r.received[0]!;

    const payload = new Verifier(hooks[0]!.secret).verify(req.body, req.headers) as any;
    expect(payload.type).toBe("pipeline_run.completed");
    expect(payload.id).toMatch(/^evt_/);
    expect(payload.id).toBe(req.headers["webhook-id"]);
    expect(payload.workspaceId).toBe(ws.workspaceId);
    expect(ms(payload.timestamp)).toBeLessThanOrEqual(h.clock.now().getTime());
    expect(payload.data).toMatchObject({ status: "completed", previousStatus: "processing", runAttempt: 1 });
    expect(payload.data.run).toMatchObject({ id: run.id, pipelineId: pipeline.id, pipelineName: pipeline.name, filename: "items.csv", status: "completed" });
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["webhook-timestamp"]).toBe(String(h.clock.now().getTime() / 1000));

    // The same signature a receiver computes by hand: HMAC-SHA256 over id.timestamp.body with the key from whsec_.
    const key = Buffer.from(hooks[0]!.secret.slice("whsec_".length), "base64");
    const mac = createHmac("sha256", key).update(`${req.headers["webhook-id"]}.${req.headers["webhook-timestamp"]}.${req.body}`).digest("base64");
    expect(req.headers["webhook-signature"]).toBe(`v1,${mac}`);

    // A changed body, or another webhook's secret, does not verify.
    expect(() => new Verifier(hooks[0]!.secret).verify(req.body.replace("completed", "failed"), req.headers)).toThrow();
    const stranger = await h.ok(ws, "POST", "/webhooks", { name: "Stranger", url: r.url });
    expect(() => new Verifier(stranger.secret).verify(req.body, req.headers)).toThrow();

    const [d] = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length === 1);
    expect(d).toMatchObject({
      webhookId: hooks[0]!.id,
      eventId: payload.id,
      eventType: "pipeline_run.completed",
      pipelineRunId: run.id,
      url: r.url,
      attempt: 1,
      trigger: "automatic",
      success: true,
      statusCode: 200,
      responseExcerpt: "ok",
      error: null,
      nextAttemptAt: null,
      createdAt: h.clock.now().toISOString(),
    });
    expect(d.id).toMatch(/^dlv_/);
    expect(d.durationMs).toBeGreaterThanOrEqual(0);
    // Delivered once: nothing more arrives after the schedule's first retry would have.
    await Bun.sleep(SCHEDULE[0]! * 3);
    expect(r.received).toHaveLength(1);
  });

  test("acknowledging the run is an event of its own", async () => {
    const r = await receiver();
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
    await waitFor("two requests", () => r.received.length === 2);
    const types = r.received.map((q) => (new Verifier(hooks[0]!.secret).verify(q.body, q.headers) as any).type);
    expect(types.sort()).toEqual(["pipeline_run.acknowledged", "pipeline_run.completed"]);
    const ack = r.received.map((q) => JSON.parse(q.body)).find((b) => b.type === "pipeline_run.acknowledged");
    expect(ack.data).toMatchObject({ status: "acknowledged", previousStatus: "completed" });
    expect(new Set(r.received.map((q) => q.headers["webhook-id"])).size).toBe(2);
  });
});

describe("failures are retried on the schedule and every attempt is logged", () => {
  test("a receiver that is down and then up gets the event once it is back; nothing is lost", async () => {
    const r = await receiver();
    r.down();
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length >= 2);
    r.up();
    const rows = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.some((d) => d.success));
    const failed = rows.filter((d) => !d.success);
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(rows.map((d) => d.attempt)).toEqual(rows.map((_, i) => i + 1));
    expect(rows.at(-1)).toMatchObject({ success: true, statusCode: 200, nextAttemptAt: null });
    for (const d of failed) {
      expect(d.statusCode).toBeNull();
      expect(d.error).toMatch(/ECONNREFUSED|connect|refused/i);
      expect(d.webhookId).toBe(hooks[0]!.id);
      // Exactly the schedule: no attempt is due before its delay.
      expect(ms(d.nextAttemptAt) - ms(d.createdAt)).toBe(SCHEDULE[d.attempt - 1]!);
    }
    expect(r.received).toHaveLength(1);
    expect(r.received[0]!.headers["webhook-id"]).toBe(rows[0].eventId);
    new Verifier(hooks[0]!.secret).verify(r.received[0]!.body, r.received[0]!.headers);
  });

  test("non-2xx answers are retried with the same event id; the answer's excerpt is kept, cut at 1 KiB", async () => {
    const r = await receiver();
    r.answer = (_, n) => (n <= 2 ? { status: n === 1 ? 500 : 404, body: "x".repeat(5000) } : { status: 204 });
    const { pipeline } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const rows = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.some((d) => d.success));
    expect(rows.map((d) => [d.attempt, d.statusCode, d.success])).toEqual([
      [1, 500, false],
      [2, 404, false],
      [3, 204, true],
    ]);
    expect(rows[0].responseExcerpt).toBe("x".repeat(1024));
    expect(rows[0].error).toBe("the receiver answered 500");
    expect(rows[2].responseExcerpt).toBeNull();
    expect(new Set(r.received.map((q) => q.headers["webhook-id"])).size).toBe(1);
    expect(new Set(r.received.map((q) => q.body)).size).toBe(1);
  });

  test("a receiver that does not answer within the timeout is a failed attempt, retried", async () => {
    const r = await receiver();
    r.answer = (_, n) => (n === 1 ? { status: 200, delayMs: 2000 } : { status: 200, body: "late but fine" });
    const { pipeline } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const rows = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.some((d) => d.success));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ success: false, statusCode: null, error: "timed out after 500 ms" });
    expect(rows[0].durationMs).toBeGreaterThanOrEqual(490);
    expect(rows[0].durationMs).toBeLessThan(1500);
    expect(rows[1]).toMatchObject({ success: true, statusCode: 200, responseExcerpt: "late but fine" });
  });

  test("Retry-After is honoured, in seconds and as an HTTP date, and capped by WEBHOOK_RETRY_AFTER_MAX_SECONDS", async () => {
    const r = await receiver();
    const inOneSecond = new Date(h.clock.now().getTime() + 1000).toUTCString();
    r.answer = (_, n) =>
      n === 1
        ? { status: 503, headers: { "retry-after": "1" } }
        : n === 2
          ? { status: 429, headers: { "retry-after": inOneSecond } }
          : n === 3
            ? { status: 503, headers: { "retry-after": "3600" } }
            : { status: 200 };
    const { pipeline } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const rows = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.some((d) => d.success), 15_000);
    expect(rows.map((d) => d.statusCode)).toEqual([503, 429, 503, 200]);
    expect(rows.slice(0, 3).map((d) => ms(d.nextAttemptAt) - ms(d.createdAt))).toEqual([1000, 1000, 2000]);
    // The receiver saw the waits (the queue runs on the wall clock).
    const at = r.received.map((q) => q.at);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(950);
    expect(at[3]! - at[2]!).toBeGreaterThanOrEqual(1950);
  }, 20_000);

  test("when the schedule is spent the last failure says no attempt follows", async () => {
    const r = await receiver();
    r.answer = () => ({ status: 500 });
    const { pipeline } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const rows = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length === SCHEDULE.length + 1, 15_000);
    expect(rows.every((d) => !d.success)).toBe(true);
    expect(rows.at(-1).nextAttemptAt).toBeNull();
    expect(rows.slice(0, -1).every((d) => d.nextAttemptAt !== null)).toBe(true);
    await Bun.sleep(SCHEDULE.at(-1)! + 300);
    expect(r.received).toHaveLength(SCHEDULE.length + 1);
  }, 20_000);

  test("a webhook paused during its retries gets no more attempts, and the log says none is due", async () => {
    const r = await receiver();
    r.answer = () => ({ status: 500 });
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length >= 2);
    await h.ok(ws, "PATCH", `/webhooks/${hooks[0]!.id}`, { isActive: false });
    const count = r.received.length;
    await Bun.sleep(SCHEDULE.reduce((a, b) => a + b, 0) + 300);
    expect(r.received.length).toBeLessThanOrEqual(count + 1);
    const rows = (await deliveries(`pipelineRunId=${run.id}`)).data;
    expect(rows.every((d: any) => d.nextAttemptAt === null)).toBe(true);
  }, 20_000);
});

describe("who gets what", () => {
  test("inactive webhooks, unlinked webhooks and event types a webhook did not choose get nothing", async () => {
    const r = await receiver();
    const url = (path: string) => r.url.replace("/hook", `/${path}`);
    const { pipeline, hooks } = await pipelineWith([
      { url: url("all") },
      { url: url("inactive"), isActive: false },
      { url: url("acks"), eventTypes: ["pipeline_run.acknowledged"] },
    ]);
    const unlinked = await h.ok(ws, "POST", "/webhooks", { name: "Unlinked", url: url("unlinked") });
    expect(hooks[2]).toMatchObject({ eventTypes: ["pipeline_run.acknowledged"] });
    const run = await completedRun(pipeline.id);
    await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
    await waitFor("all: 2, acks: 1", () => r.received.filter((q) => q.path === "/all").length === 2 && r.received.some((q) => q.path === "/acks"));
    await Bun.sleep(300);
    const by = (p: string) => r.received.filter((q) => q.path === `/${p}`).map((q) => JSON.parse(q.body).type);
    expect(by("all").sort()).toEqual(["pipeline_run.acknowledged", "pipeline_run.completed"]);
    expect(by("acks")).toEqual(["pipeline_run.acknowledged"]);
    expect(by("inactive")).toEqual([]);
    expect(by("unlinked")).toEqual([]);
    expect((await deliveries(`webhookId=${hooks[1]!.id}`)).pagination.total).toBe(0);
    expect((await deliveries(`webhookId=${unlinked.id}`)).pagination.total).toBe(0);
  });

  test("one event to several webhooks: a failing one retries on its own; the others are not sent again", async () => {
    const ok = await receiver();
    const flaky = await receiver();
    flaky.answer = (_, n) => (n === 1 ? { status: 503 } : { status: 200 });
    const { pipeline, hooks } = await pipelineWith([{ url: ok.url }, { url: flaky.url }]);
    const run = await completedRun(pipeline.id);
    const rows = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.filter((d) => d.success).length === 2);
    const of = (id: string) => rows.filter((d) => d.webhookId === id).map((d) => [d.attempt, d.success]);
    expect(of(hooks[0]!.id)).toEqual([[1, true]]);
    expect(of(hooks[1]!.id)).toEqual([
      [1, false],
      [2, true],
    ]);
    await Bun.sleep(SCHEDULE[1]! * 2);
    expect(ok.received).toHaveLength(1);
    expect(flaky.received).toHaveLength(2);
  });

  test("a run.event job that runs again (another consumer failed) starts no second delivery chain", async () => {
    const r = await receiver();
    const { pipeline } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    await waitFor("the completed event", () => r.received.length === 1);
    const event: RunEventPayload = {
      eventId: newId("event"),
      type: "pipeline_run.acknowledged",
      workspaceId: ws.workspaceId,
      runId: run.id,
      pipelineId: pipeline.id,
      connectionId: null,
      status: "acknowledged",
      previousStatus: "completed",
      attempt: 1,
      at: h.clock.now().toISOString(),
    };
    for (let i = 0; i < 3; i++) {
      await h.svc.queue.add({ name: RUN_EVENT_JOB, payload: event });
      await waitFor("the event delivered", () => r.received.some((q) => q.headers["webhook-id"] === event.eventId));
      await Bun.sleep(150);
    }
    expect(r.received.filter((q) => q.headers["webhook-id"] === event.eventId)).toHaveLength(1);
    expect((await deliveries(`eventId=${event.eventId}`)).pagination.total).toBe(1);
  });
});

describe("the delivery log", () => {
  test("lists as {data, pagination}, newest first, filtered by webhook, run and success", async () => {
    const r = await receiver();
    r.answer = (_, n) => (n === 1 ? { status: 500 } : { status: 200 });
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.some((d) => d.success));
    const all = await deliveries(`webhookId=${hooks[0]!.id}`);
    expect(all.pagination).toEqual({ page: 1, limit: 100, total: 2, totalPages: 1 });
    expect(all.data.map((d) => d.attempt)).toEqual([2, 1]);
    expect((await deliveries(`pipelineRunId=${run.id}&success=false`)).data.map((d) => d.attempt)).toEqual([1]);
    expect((await deliveries(`pipelineRunId=${run.id}&success=true`)).data.map((d) => d.attempt)).toEqual([2]);
    const paged = await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${run.id}&limit=1&page=2`);
    expect(paged.pagination).toEqual({ page: 2, limit: 1, total: 2, totalPages: 2 });
    expect(paged.data.map((d: any) => d.attempt)).toEqual([1]);
  });

  test("a bad filter is a 400 naming it", async () => {
    const res = await h.api(ws, "GET", "/webhooks/deliveries?success=maybe");
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^success: /);
    expect((await h.api(ws, "GET", "/webhooks/deliveries?limit=0")).body.message).toMatch(/^limit: /);
  });

  test("another workspace sees none of the deliveries, and cannot redeliver them", async () => {
    const r = await receiver();
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const [d] = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length === 1);
    const theirs = await deliveries("", other);
    expect(theirs.pagination.total).toBe(0);
    expect((await deliveries(`webhookId=${hooks[0]!.id}`, other)).data).toEqual([]);
    expect((await deliveries(`pipelineRunId=${run.id}`, other)).data).toEqual([]);
    const res = await h.api(other, "POST", `/webhooks/deliveries/${d.id}/redeliver`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect(r.received).toHaveLength(1);
  });
});

describe("redelivery", () => {
  test("sends the same event again now, signed with the current secret, and records a manual attempt", async () => {
    const r = await receiver();
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const [first] = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length === 1);

    const again = await h.ok(ws, "POST", `/webhooks/deliveries/${first.id}/redeliver`);
    expect(again).toMatchObject({ eventId: first.eventId, webhookId: hooks[0]!.id, attempt: 2, trigger: "manual", success: true, statusCode: 200, nextAttemptAt: null });
    expect(again.id).not.toBe(first.id);
    expect(r.received).toHaveLength(2);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect(r.received[1]!.headers["webhook-id"]).toBe(first.eventId);

    // After a rotation the new secret signs and the old one no longer verifies.
    const rotated = await h.ok(ws, "POST", `/webhooks/${hooks[0]!.id}/rotate-secret`);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(hooks[0]!.secret);
    const third = await h.ok(ws, "POST", `/webhooks/deliveries/${first.id}/redeliver`);
    expect(third.attempt).toBe(3);
    const last = r.received[2]!;
    new Verifier(rotated.secret).verify(last.body, last.headers);
    expect(() => new Verifier(hooks[0]!.secret).verify(last.body, last.headers)).toThrow();
    expect((await deliveries(`eventId=${first.eventId}`)).pagination.total).toBe(3);
  });

  test("a failed redelivery is recorded and not retried; a paused or deleted webhook cannot be redelivered to", async () => {
    const r = await receiver();
    const { pipeline, hooks } = await pipelineWith([{ url: r.url }]);
    const run = await completedRun(pipeline.id);
    const [first] = await waitDeliveries(`pipelineRunId=${run.id}`, (rows) => rows.length === 1);
    r.answer = () => ({ status: 502, body: "bad gateway" });
    const failed = await h.ok(ws, "POST", `/webhooks/deliveries/${first.id}/redeliver`);
    expect(failed).toMatchObject({ success: false, statusCode: 502, responseExcerpt: "bad gateway", trigger: "manual", nextAttemptAt: null });
    await Bun.sleep(SCHEDULE[0]! * 3);
    expect(r.received).toHaveLength(2);

    await h.ok(ws, "PATCH", `/webhooks/${hooks[0]!.id}`, { isActive: false });
    const paused = await h.api(ws, "POST", `/webhooks/deliveries/${first.id}/redeliver`);
    expect(paused.status).toBe(409);
    expect(paused.body.message).toMatch(/inactive/);
    await h.ok(ws, "DELETE", `/webhooks/${hooks[0]!.id}`);
    const gone = await h.api(ws, "POST", `/webhooks/deliveries/${first.id}/redeliver`);
    expect(gone.status).toBe(409);
    expect(gone.body.message).toMatch(/deleted/);
    // The log outlives the webhook.
    expect((await deliveries(`webhookId=${hooks[0]!.id}`)).pagination.total).toBe(2);
    expect(r.received).toHaveLength(2);
    expect((await h.api(ws, "POST", "/webhooks/deliveries/dlv_nope/redeliver")).status).toBe(404);
  });
});
