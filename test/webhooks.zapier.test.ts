import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { Webhook as Verifier } from "standardwebhooks";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { Receiver } from "./helpers/receiver";
import { createPipeline, startUpload, waitForRun } from "./helpers/runs";

// Harness start (a Postgres database, migrations, the job queue) can take seconds on a busy machine.
setDefaultTimeout(30_000);

/**
 * Automation-platform subscriptions (workspace-level PIPELINE_RUN_EVENT
 * hooks): subscribe and unsubscribe on every surface, every run event of the
 * workspace delivered through the same signed, retried, logged path, and
 * a 410 answer unsubscribing. Also the webhook extras on GraphQL and tRPC
 * (deliveries, redelivery, secret rotation).
 */
const SUBSCRIBE = "/webhooks/zapier/pipeline-run-events/subscribe";
const UNSUBSCRIBE = "/webhooks/zapier/pipeline-run-events/unsubscribe";

let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;
/** Subscriptions to addresses nobody listens on live here, so they never see the other tests' events. */
let idle: TestWorkspace;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await Harness.start({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCHEDULE: "100ms,200ms" } });
  h.clock.set(new Date());
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
  idle = await h.workspace({ name: "Idle" });
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

async function completedRun(w: TestWorkspace = ws) {
  const { pipeline } = await createPipeline(h, w);
  const run = await startUpload(h, w, pipeline.id);
  await waitForRun(h, w, run.id, "completed");
  return { pipeline, run: run as { id: string } };
}

/** DELETE with a JSON body, as Zapier sends it. */
function deleteWithBody(w: TestWorkspace, path: string, body: unknown) {
  return h.request("DELETE", path, { key: w.apiKey, version: "2026-05-25", body });
}

describe("subscribe", () => {
  test("registers a workspace-level PIPELINE_RUN_EVENT hook and answers its id and signing secret once", async () => {
    const res = await h.ok(idle, "POST", SUBSCRIBE, { targetUrl: "https://hooks.zapier.com/hooks/standard/1/abc/", event: "pipeline_run", zap_id: 42 });
    expect(res).toMatchObject({
      kind: "PIPELINE_RUN_EVENT",
      url: "https://hooks.zapier.com/hooks/standard/1/abc/",
      isActive: true,
      workspaceId: idle.workspaceId,
      eventTypes: ["pipeline_run.completed", "pipeline_run.delivered", "pipeline_run.failed", "pipeline_run.acknowledged"],
      name: "Automation subscription (hooks.zapier.com)",
    });
    expect(res.id).toMatch(/^wh_/);
    expect(res.secret).toMatch(/^whsec_/);
    const read = await h.ok(idle, "GET", `/webhooks/${res.id}`);
    expect(read.secret).toBeUndefined();
    expect((await h.ok(idle, "GET", "/webhooks?kind=PIPELINE_RUN_EVENT")).data.map((w: any) => w.id)).toContain(res.id);
    expect((await h.ok(idle, "GET", "/webhooks?kind=WEBHOOK")).data.map((w: any) => w.id)).not.toContain(res.id);
  });

  test.each(["target_url", "hookUrl", "hook_url", "url"])("accepts the target as %s", async (member) => {
    const res = await h.ok(idle, "POST", SUBSCRIBE, { [member]: `https://example.com/${member}` });
    expect(res.url).toBe(`https://example.com/${member}`);
  });

  test("refuses a body without a target, with two different targets, or with a bad URL: 400 naming targetUrl", async () => {
    for (const [body, message] of [
      [{}, /^targetUrl: is required/],
      [{ name: "x" }, /^targetUrl: is required/],
      [{ targetUrl: "https://a.example.com/", hookUrl: "https://b.example.com/" }, /^targetUrl: the body names different URLs/],
      [{ targetUrl: "ftp://a.example.com/" }, /^targetUrl: must be an absolute http/],
      [{ hookUrl: 7 }, /^hookUrl: /],
    ] as const) {
      const res = await h.api(idle, "POST", SUBSCRIBE, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(message);
    }
  });
});

describe("delivery to subscriptions", () => {
  test("every run event of the workspace reaches the hook, signed with its own secret; other workspaces' events do not", async () => {
    const r = await receiver();
    const sub = await h.ok(ws, "POST", SUBSCRIBE, { targetUrl: r.url });
    const { run } = await completedRun();
    await completedRun(other);
    await waitFor("the event", () => r.received.length >= 1);
    await Bun.sleep(300);
    expect(r.received).toHaveLength(1);
    const payload = new Verifier(sub.secret).verify(r.received[0]!.body, r.received[0]!.headers) as any;
    expect(payload).toMatchObject({ type: "pipeline_run.completed", workspaceId: ws.workspaceId, data: { run: { id: run.id } } });
    const log = await h.ok(ws, "GET", `/webhooks/deliveries?webhookId=${sub.id}`);
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({ success: true, statusCode: 200, pipelineRunId: run.id });
    await h.ok(ws, "DELETE", `${UNSUBSCRIBE}?id=${sub.id}`);
  });

  test("a pipeline webhook and a subscription each get the event once, each signed with its own secret", async () => {
    const r = await receiver();
    const sub = await h.ok(ws, "POST", SUBSCRIBE, { targetUrl: r.url.replace("/hook", "/zap") });
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Pipeline hook", url: r.url });
    const { pipeline } = await createPipeline(h, ws);
    await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: [hook.id] });
    const run = await startUpload(h, ws, pipeline.id);
    await waitForRun(h, ws, run.id, "completed");
    await waitFor("two requests", () => r.received.length === 2);
    const zap = r.received.find((q) => q.path === "/zap")!;
    const own = r.received.find((q) => q.path === "/hook")!;
    new Verifier(sub.secret).verify(zap.body, zap.headers);
    new Verifier(hook.secret).verify(own.body, own.headers);
    expect(zap.headers["webhook-id"]).toBe(own.headers["webhook-id"]);
    await h.ok(ws, "DELETE", `${UNSUBSCRIBE}?id=${sub.id}`);
  });

  test("a target answering 410 Gone is unsubscribed: no retry, no further events, the log stays", async () => {
    const r = await receiver();
    r.answer = () => ({ status: 410, body: "gone" });
    const sub = await h.ok(ws, "POST", SUBSCRIBE, { targetUrl: r.url });
    const { run } = await completedRun();
    await waitFor("the 410", () => r.received.length === 1);
    await waitFor("unsubscribed", async () => (await h.api(ws, "GET", `/webhooks/${sub.id}`)).status === 404);
    const log = await h.ok(ws, "GET", `/webhooks/deliveries?webhookId=${sub.id}`);
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({ success: false, statusCode: 410, responseExcerpt: "gone", nextAttemptAt: null, pipelineRunId: run.id });
    await completedRun();
    await Bun.sleep(400);
    expect(r.received).toHaveLength(1);
  });

  test("a pipeline webhook answering 410 is an ordinary failure: retried, not removed", async () => {
    const r = await receiver();
    r.answer = (_, n) => (n === 1 ? { status: 410 } : { status: 200 });
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Plain", url: r.url });
    const { pipeline } = await createPipeline(h, ws);
    await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: [hook.id] });
    const run = await startUpload(h, ws, pipeline.id);
    await waitForRun(h, ws, run.id, "completed");
    await waitFor("retried", () => r.received.length === 2);
    expect((await h.api(ws, "GET", `/webhooks/${hook.id}`)).status).toBe(200);
  });
});

describe("unsubscribe", () => {
  test("by id in the JSON body, as Zapier sends it", async () => {
    const sub = await h.ok(idle, "POST", SUBSCRIBE, { targetUrl: "https://hooks.example.com/by-id" });
    const res = await deleteWithBody(idle, UNSUBSCRIBE, { id: sub.id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ids: [sub.id], deleted: true });
    expect((await h.api(idle, "GET", `/webhooks/${sub.id}`)).status).toBe(404);
  });

  test("by URL (body or query, any of the accepted names): every subscription with that URL", async () => {
    const a = await h.ok(idle, "POST", SUBSCRIBE, { targetUrl: "https://hooks.example.com/by-url" });
    const b = await h.ok(idle, "POST", SUBSCRIBE, { hookUrl: "https://hooks.example.com/by-url" });
    const res = await h.ok(idle, "DELETE", `${UNSUBSCRIBE}?hookUrl=${encodeURIComponent("https://hooks.example.com/by-url")}`);
    expect(res.ids.sort()).toEqual([a.id, b.id].sort());
    const c = await h.ok(idle, "POST", SUBSCRIBE, { url: "https://hooks.example.com/by-url-2" });
    expect((await deleteWithBody(idle, UNSUBSCRIBE, { targetUrl: "https://hooks.example.com/by-url-2" })).body).toEqual({ ids: [c.id], deleted: true });
  });

  test("an unknown id, another workspace's subscription and a pipeline webhook are 404; nothing named is 400", async () => {
    const sub = await h.ok(idle, "POST", SUBSCRIBE, { targetUrl: "https://hooks.example.com/kept" });
    const hook = await h.ok(idle, "POST", "/webhooks", { name: "Pipeline hook", url: "https://hooks.example.com/kept" });
    for (const [w, body] of [
      [idle, { id: "wh_nope" }],
      [other, { id: sub.id }],
      [other, { targetUrl: "https://hooks.example.com/kept" }],
      [idle, { id: hook.id }],
    ] as const) {
      const res = await deleteWithBody(w, UNSUBSCRIBE, body);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe("not_found");
    }
    const none = await deleteWithBody(idle, UNSUBSCRIBE, {});
    expect(none.status).toBe(400);
    expect(none.body.message).toMatch(/^id: is required/);
    expect((await h.api(idle, "GET", `/webhooks/${sub.id}`)).status).toBe(200);
    expect((await h.api(idle, "GET", `/webhooks/${hook.id}`)).status).toBe(200);
  });
});

describe("GraphQL", () => {
  test("subscribe, list deliveries, redeliver, rotate the secret, unsubscribe", async () => {
    const r = await receiver();
    const sub = await h.graphql(ws.apiKey, `mutation($i: SubscribeInput!) { subscribePipelineRunEvents(input: $i) { id kind url secret eventTypes } }`, {
      i: { hookUrl: r.url },
    });
    expect(sub.body.errors).toBeUndefined();
    const created = sub.body.data!.subscribePipelineRunEvents;
    expect(created).toMatchObject({ kind: "PIPELINE_RUN_EVENT", url: r.url });
    expect(created.secret).toMatch(/^whsec_/);
    const { run } = await completedRun();
    await waitFor("the event", () => r.received.length === 1);

    const q = `query($run: ID, $hook: ID) { webhookDeliveries(pipelineRunId: $run, webhookId: $hook) { data { id webhookId eventType attempt trigger success statusCode nextAttemptAt error responseExcerpt } pagination { total } } }`;
    let list: any;
    await waitFor("the delivery", async () => {
      list = (await h.graphql(ws.apiKey, q, { run: run.id, hook: created.id })).body.data!.webhookDeliveries;
      return list.data.length === 1;
    });
    expect(list.data[0]).toMatchObject({ webhookId: created.id, eventType: "pipeline_run.completed", attempt: 1, trigger: "automatic", success: true, statusCode: 200, nextAttemptAt: null, error: null, responseExcerpt: "ok" });
    expect((await h.graphql(other.apiKey, q, { run: run.id, hook: created.id })).body.data!.webhookDeliveries.pagination.total).toBe(0);

    const rotated = await h.graphql(ws.apiKey, `mutation($id: ID!) { rotateWebhookSecret(id: $id) { id secret } }`, { id: created.id });
    const secret = rotated.body.data!.rotateWebhookSecret.secret;
    expect(secret).not.toBe(created.secret);
    const again = await h.graphql(ws.apiKey, `mutation($id: ID!) { redeliverWebhookDelivery(id: $id) { attempt trigger success } }`, { id: list.data[0].id });
    expect(again.body.data!.redeliverWebhookDelivery).toEqual({ attempt: 2, trigger: "manual", success: true });
    new Verifier(secret).verify(r.received[1]!.body, r.received[1]!.headers);

    const gone = await h.graphql(ws.apiKey, `mutation($i: UnsubscribeInput!) { unsubscribePipelineRunEvents(input: $i) { ids deleted } }`, { i: { id: created.id } });
    expect(gone.body.data!.unsubscribePipelineRunEvents).toEqual({ ids: [created.id], deleted: true });
    const missing = await h.graphql(ws.apiKey, `mutation($i: UnsubscribeInput!) { unsubscribePipelineRunEvents(input: $i) { ids } }`, { i: { id: created.id } });
    expect(missing.body.errors?.[0]?.extensions).toMatchObject({ error: "not_found", statusCode: 404 });
    const hooks = await h.graphql(ws.apiKey, `{ webhooks(kind: PIPELINE_RUN_EVENT, limit: 100) { data { id kind description eventTypes } } }`);
    expect(hooks.body.errors).toBeUndefined();
    expect(hooks.body.data!.webhooks.data.every((w: any) => w.kind === "PIPELINE_RUN_EVENT" && w.description === null && w.eventTypes.length === 4)).toBe(true);
  });
});

describe("tRPC", () => {
  test("subscribe, deliveries, redeliver, rotateSecret, unsubscribe", async () => {
    const r = await receiver();
    const t = h.trpc(ws);
    const created = await t.webhooks.subscribe({ targetUrl: r.url, name: "Make.com scenario" });
    expect(created).toMatchObject({ kind: "PIPELINE_RUN_EVENT", name: "Make.com scenario" });
    const { run } = await completedRun();
    await waitFor("the event", () => r.received.length === 1);
    let page: any;
    await waitFor("the delivery", async () => {
      page = await t.webhooks.deliveries({ pipelineRunId: run.id, webhookId: created.id });
      return page.data.length === 1;
    });
    expect(page.data[0]).toMatchObject({ webhookId: created.id, success: true });
    expect((await h.trpc(other).webhooks.deliveries({ pipelineRunId: run.id })).pagination.total).toBe(0);
    const rotated = await t.webhooks.rotateSecret({ id: created.id });
    expect(rotated.secret).not.toBe(created.secret);
    const again = await t.webhooks.redeliver({ id: page.data[0].id });
    expect(again).toMatchObject({ attempt: 2, trigger: "manual", success: true });
    new Verifier(rotated.secret).verify(r.received[1]!.body, r.received[1]!.headers);
    expect(await t.webhooks.unsubscribe({ url: r.url })).toEqual({ ids: [created.id], deleted: true });
    const err = await t.webhooks.unsubscribe({ id: created.id }).catch((e) => e);
    expect(err).toBeInstanceOf(TRPCError);
    expect((err as TRPCError).code).toBe("NOT_FOUND");
    const bad = await t.webhooks.subscribe({}).catch((e) => e);
    expect((bad as TRPCError).code).toBe("BAD_REQUEST");
    expect((bad as TRPCError).message).toMatch(/^targetUrl: is required/);
  });
});
