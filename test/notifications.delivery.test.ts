import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCError } from "@trpc/server";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { EMAIL_FROM, NotifyServers, SLACK_TOKEN, SMTP_USER, TWILIO_FROM, TWILIO_SID, TWILIO_TOKEN } from "./helpers/notify-servers";
import { createPipeline, type PipelineFixture, runToEnd } from "./helpers/runs";
import { deliverSend, fanOutRunEvent, giveUpSend, SEND_ATTEMPTS } from "../src/services/notifications";
import type { RunEventPayload } from "../src/services/run-path/announce/run-events";

/**
 * A run that fails or succeeds notifies each enabled preference of its
 * connection, through the real client libraries (nodemailer, @slack/web-api,
 * twilio) pointed at local servers; the tests read what those servers
 * received. Sends are durable jobs, retried on transient errors, and every
 * one is recorded and listed by GET /notifications/sends.
 */

let servers: NotifyServers;
let h: Harness;
let ws: TestWorkspace;
let other: TestWorkspace;

/** One invalid row (qty "lots") fails the run under the default onInvalidRow (fail). */
const BAD_CSV = "SKU,Qty,Name\na-1,3,Bolt\nb-2,lots,Nut\nc-3,7,Washer\n";

beforeAll(async () => {
  servers = await NotifyServers.start();
  h = await Harness.start({ env: servers.env() });
  ws = await h.workspace();
  other = await h.workspace({ name: "Other" });
});
afterAll(async () => {
  await h.close();
  await servers.close();
});

async function sendsOf(runId: string, who = ws) {
  return (await h.ok(who, "GET", `/notifications/sends?runId=${runId}&limit=100`)).data as any[];
}

/** Waits until the run's sends number `count` and none is pending. */
async function settled(runId: string, count: number, timeoutMs = 10_000) {
  let last: any[] = [];
  await waitFor(
    `${count} settled sends of ${runId}`,
    async () => {
      last = await sendsOf(runId);
      return last.length === count && last.every((s) => s.status !== "pending");
    },
    timeoutMs,
  ).catch((e) => {
    throw new Error(`${(e as Error).message}: ${JSON.stringify(last)}`);
  });
  return last;
}

async function prefs(f: PipelineFixture, preferences: unknown[]) {
  return h.ok(ws, "PUT", `/notifications/preferences/${f.connection.id}`, { preferences });
}

describe("a failed run", () => {
  let f: PipelineFixture;
  let run: any;
  let sends: any[];

  beforeAll(async () => {
    f = await createPipeline(h, ws, { name: "Orders import", connectionName: "Acme SFTP" });
    await prefs(f, [
      { eventType: "PIPELINE_RUN_FAILED", channel: "EMAIL", isEnabled: true, recipients: ["ops@acme.test", "oncall@acme.test"] },
      { eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["#ops-alerts"] },
      { eventType: "PIPELINE_RUN_FAILED", channel: "SMS", isEnabled: true, recipients: ["+15551230001"] },
      { eventType: "PIPELINE_RUN_SUCCEEDED", channel: "EMAIL", isEnabled: true, recipients: ["reports@acme.test"] },
    ]);
    run = await runToEnd(h, ws, f.pipeline.id, BAD_CSV, "orders-2026-11-22.csv");
    expect(run.status).toBe("failed");
    sends = await settled(run.id, 4);
  });

  test("one send per recipient of each enabled FAILED preference, all sent and recorded", () => {
    expect(sends.map((s) => [s.channel, s.recipient, s.status, s.attempts, s.eventType]).sort()).toEqual(
      [
        ["EMAIL", "ops@acme.test", "sent", 1, "PIPELINE_RUN_FAILED"],
        ["EMAIL", "oncall@acme.test", "sent", 1, "PIPELINE_RUN_FAILED"],
        ["SLACK", "#ops-alerts", "sent", 1, "PIPELINE_RUN_FAILED"],
        ["SMS", "+15551230001", "sent", 1, "PIPELINE_RUN_FAILED"],
      ].sort(),
    );
    for (const s of sends) {
      expect(s).toMatchObject({ clientId: f.connection.id, runId: run.id, error: null, workspaceId: ws.workspaceId });
      expect(s.id).toStartWith("nsend_");
      expect(s.eventId).toStartWith("evt_");
      expect(s.providerId).toBeTruthy();
      expect(s.sentAt).toBe("2026-11-22T10:00:00.000Z");
    }
    // Nobody on the SUCCEEDED preference heard of a failure.
    expect(servers.mails.some((m) => m.to.includes("reports@acme.test"))).toBe(false);
  });

  const mentionsTheRun = (text: string) => {
    expect(text).toContain(run.id);
    expect(text).toContain("Orders import");
    expect(text).toContain("orders-2026-11-22.csv");
    expect(text).toContain(`http://localhost:3000/pipeline-runs/${run.id}`);
    expect(text).toContain("failed");
  };

  test("e-mail: over SMTP with the configured login and From, to each recipient, plain text and HTML", () => {
    const mails = servers.mails.filter((m) => m.text.includes(run.id));
    expect(mails.map((m) => m.to).sort()).toEqual([["oncall@acme.test"], ["ops@acme.test"]]);
    for (const m of mails) {
      expect(m.auth).toBe(SMTP_USER);
      expect(m.from).toBe("alerts@fps.test");
      expect(EMAIL_FROM).toContain(m.from);
      expect(m.subject).toBe("[File Pipeline] Run failed: Orders import - orders-2026-11-22.csv");
      mentionsTheRun(m.text);
      expect(m.text).toContain("Acme SFTP");
      expect(m.text).toContain(f.connection.id);
      expect(m.text).toContain("Rows:       3 read, 2 valid, 1 invalid");
      expect(m.text).toMatch(/First row errors \(1 of 1\):\n {2}- data row 2, qty: /);
      expect(m.text).toContain(`Error:      ${run.errorMessage}`);
      expect(m.html).toContain(`<a href="http://localhost:3000/pipeline-runs/${run.id}">View the run</a>`);
      expect(m.html).toContain("data row 2, qty: ");
    }
    const recorded = sends.filter((s) => s.channel === "EMAIL").map((s) => s.providerId).sort();
    expect(mails.map((m) => m.messageId).sort()).toEqual(recorded);
  });

  test("Slack: chat.postMessage with the bot token to the recipient channel", () => {
    const calls = servers.slackCalls.filter((c) => c.params.text?.includes(run.id));
    expect(calls).toHaveLength(1);
    const c = calls[0]!;
    expect(c.path).toBe("/api/chat.postMessage");
    expect(c.authorization).toBe(`Bearer ${SLACK_TOKEN}`);
    expect(c.params.channel).toBe("#ops-alerts");
    mentionsTheRun(c.params.text!);
    expect(c.params.text).toContain("3 read, 2 valid, 1 invalid");
    expect(c.params.text).toContain("data row 2, qty: ");
    expect(c.params.text).toContain(`<http://localhost:3000/pipeline-runs/${run.id}|View the run>`);
  });

  test("SMS: a Twilio message from the configured number to the recipient, short, with the first error and the link", () => {
    const calls = servers.twilioCalls.filter((c) => c.params.Body?.includes(run.id));
    expect(calls).toHaveLength(1);
    const c = calls[0]!;
    expect(c.path).toBe(`/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`);
    expect(c.authorization).toBe(`Basic ${Buffer.from(`${TWILIO_SID}:${TWILIO_TOKEN}`).toString("base64")}`);
    expect(c.params.To).toBe("+15551230001");
    expect(c.params.From).toBe(TWILIO_FROM);
    mentionsTheRun(c.params.Body!);
    expect(c.params.Body).toContain("Rows: 3 read, 2 valid, 1 invalid");
    expect(c.params.Body).toContain(`Error: ${run.errorMessage.slice(0, 60)}`);
    expect(c.params.Body).toContain("First row error: data row 2, qty: ");
    expect(c.params.Body!.length).toBeLessThanOrEqual(480);
    expect(sends.find((s) => s.channel === "SMS").providerId).toMatch(/^SM0+\d+$/);
  });

  test("acknowledging the run notifies nobody", async () => {
    const before = { mails: servers.mails.length, slack: servers.slackCalls.length, sms: servers.twilioCalls.length };
    await h.ok(ws, "PATCH", `/pipeline-runs/${run.id}/status`, { status: "acknowledged" });
    await Bun.sleep(1500);
    expect(await sendsOf(run.id)).toHaveLength(4);
    expect({ mails: servers.mails.length, slack: servers.slackCalls.length, sms: servers.twilioCalls.length }).toEqual(before);
  });

  test("the same event handed over twice sends nothing more (one send per event, preference and recipient)", async () => {
    const event: RunEventPayload = {
      eventId: sends[0].eventId,
      type: "pipeline_run.failed",
      workspaceId: ws.workspaceId,
      runId: run.id,
      pipelineId: f.pipeline.id,
      connectionId: f.connection.id,
      status: "failed",
      previousStatus: "processing",
      attempt: 1,
      at: new Date().toISOString(),
    };
    expect(await fanOutRunEvent(h.svc, event)).toBe(0);
    expect(await sendsOf(run.id)).toHaveLength(4);
  });
});

describe("a successful run", () => {
  test("notifies the SUCCEEDED preferences only, with counts and the first errors of skipped rows", async () => {
    const f = await createPipeline(h, ws, {
      name: "Lenient import",
      mappings: {
        fieldMappings: [
          { source: "SKU", target: "sku", transform: "uppercase" },
          { source: "Qty", target: "qty", transform: "integer" },
          { source: "Name", target: "name", transform: "trim" },
        ],
        validations: { onInvalidRow: "skip" },
      },
    });
    await prefs(f, [
      { eventType: "PIPELINE_RUN_SUCCEEDED", channel: "SLACK", isEnabled: true, recipients: ["C0SUCCESS1"] },
      { eventType: "PIPELINE_RUN_SUCCEEDED", channel: "EMAIL", isEnabled: false, recipients: ["muted@acme.test"] },
      { eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["C0FAILURE1"] },
    ]);
    const run = await runToEnd(h, ws, f.pipeline.id, BAD_CSV, "lenient.csv");
    expect(run.status).toBe("completed");
    const sends = await settled(run.id, 1);
    expect(sends[0]).toMatchObject({ channel: "SLACK", recipient: "C0SUCCESS1", status: "sent", eventType: "PIPELINE_RUN_SUCCEEDED" });
    const call = servers.slackCalls.find((c) => c.params.text?.includes(run.id))!;
    expect(call.params.channel).toBe("C0SUCCESS1");
    expect(call.params.text).toContain("*Pipeline run succeeded*: Lenient import - lenient.csv");
    expect(call.params.text).toContain("3 read, 2 valid, 1 invalid (1 skipped, 0 quarantined)");
    expect(call.params.text).toContain("data row 2, qty: ");
    expect(servers.slackCalls.some((c) => c.params.channel === "C0FAILURE1")).toBe(false);
    expect(servers.mails.some((m) => m.to.includes("muted@acme.test"))).toBe(false);
  });
});

describe("failures", () => {
  test(
    "a provider that fails, then answers: the send is retried by the queue, each attempt recorded, then sent",
    async () => {
      const f = await createPipeline(h, ws);
      // Slack answers 503 once, Twilio 500 once, for these recipients only.
      servers.slackScript = (c, n) => (c.params.channel === "#flaky" && n === 1 ? { status: 503, body: { ok: false } } : undefined);
      servers.twilioScript = (c, n) =>
        c.params.To === "+15551230009" && n === 1 ? { status: 500, body: { code: 20500, message: "Internal Server Error", status: 500 } } : undefined;
      await prefs(f, [
        { eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["#flaky"] },
        { eventType: "PIPELINE_RUN_FAILED", channel: "SMS", isEnabled: true, recipients: ["+15551230009"] },
      ]);
      const run = await runToEnd(h, ws, f.pipeline.id, BAD_CSV);
      // After the first attempt: still pending, with the error of that attempt.
      await waitFor("first attempts recorded", async () => (await sendsOf(run.id)).filter((s) => s.attempts === 1).length === 2);
      const pending = await sendsOf(run.id);
      expect(pending.map((s) => s.status)).toEqual(["pending", "pending"]);
      const slackPending = pending.find((s) => s.channel === "SLACK");
      expect(slackPending.error).toBe("attempt 1 of 12: Slack: HTTP 503");
      expect(pending.find((s) => s.channel === "SMS").error).toMatch(/^attempt 1 of 12: Twilio 500 \(error 20500\): /);
      const done = await settled(run.id, 2, 15_000);
      for (const s of done) expect(s).toMatchObject({ status: "sent", attempts: 2, error: null });
      expect(servers.slackCalls.filter((c) => c.params.channel === "#flaky")).toHaveLength(2);
      expect(servers.twilioCalls.filter((c) => c.params.To === "+15551230009")).toHaveLength(2);
      servers.slackScript = () => undefined;
      servers.twilioScript = () => undefined;
    },
    30_000,
  );

  test("a refusal retrying cannot fix fails the send at once: unknown Slack channel, refused mailbox, invalid number", async () => {
    const f = await createPipeline(h, ws);
    servers.refusedMailboxes.add("gone@acme.test");
    servers.slackScript = (c) => (c.params.channel === "#archived" ? { status: 200, body: { ok: false, error: "channel_not_found" } } : undefined);
    servers.twilioScript = (c) =>
      c.params.To === "+15559999999"
        ? { status: 400, body: { code: 21211, message: "The 'To' number +15559999999 is not a valid phone number.", status: 400 } }
        : undefined;
    await prefs(f, [
      { eventType: "PIPELINE_RUN_FAILED", channel: "EMAIL", isEnabled: true, recipients: ["gone@acme.test", "fine@acme.test"] },
      { eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["#archived"] },
      { eventType: "PIPELINE_RUN_FAILED", channel: "SMS", isEnabled: true, recipients: ["+15559999999"] },
    ]);
    const run = await runToEnd(h, ws, f.pipeline.id, BAD_CSV);
    const sends = await settled(run.id, 4);
    const by = (r: string) => sends.find((s) => s.recipient === r);
    expect(by("fine@acme.test")).toMatchObject({ status: "sent", attempts: 1 });
    expect(by("gone@acme.test")).toMatchObject({ status: "failed", attempts: 1, providerId: null, sentAt: null });
    expect(by("gone@acme.test").error).toMatch(/^SMTP 550: /);
    expect(by("#archived")).toMatchObject({ status: "failed", attempts: 1, error: "Slack: channel_not_found" });
    expect(by("+15559999999")).toMatchObject({ status: "failed", attempts: 1 });
    expect(by("+15559999999").error).toBe("Twilio 400 (error 21211): The 'To' number +15559999999 is not a valid phone number.");
    expect(servers.slackCalls.filter((c) => c.params.channel === "#archived")).toHaveLength(1);
    servers.slackScript = () => undefined;
    servers.twilioScript = () => undefined;
  });
});

describe("giving up", () => {
  test("a send whose last attempt fails is recorded as failed with the last error; a later run of its job does nothing", async () => {
    const f = await createPipeline(h, ws);
    servers.slackScript = (c) => (c.params.channel === "#down" ? { status: 502, body: { ok: false } } : undefined);
    await prefs(f, [{ eventType: "PIPELINE_RUN_FAILED", channel: "SLACK", isEnabled: true, recipients: ["#down"] }]);
    const run = await runToEnd(h, ws, f.pipeline.id, BAD_CSV);
    await waitFor("the first attempt recorded", async () => (await sendsOf(run.id))[0]?.attempts === 1);
    const [send] = await sendsOf(run.id);
    expect(send.status).toBe("pending");
    // The queue's last attempt, as its worker would run it (the real client against the stand-in), then its give-up.
    const last = await deliverSend(h.svc, { sendId: send.id }, { attempt: SEND_ATTEMPTS, maxAttempts: SEND_ATTEMPTS }).catch((e) => e);
    expect(last).toBeInstanceOf(Error);
    await giveUpSend(h.svc, { sendId: send.id }, last);
    const [failed] = await sendsOf(run.id);
    expect(failed).toMatchObject({ status: "failed", error: "gave up after 12 attempts; last error: Slack: HTTP 502", providerId: null });
    const calls = servers.slackCalls.filter((c) => c.params.channel === "#down").length;
    await deliverSend(h.svc, { sendId: send.id }, { attempt: 3, maxAttempts: SEND_ATTEMPTS });
    expect(servers.slackCalls.filter((c) => c.params.channel === "#down")).toHaveLength(calls);
    expect((await sendsOf(run.id))[0]).toEqual(failed);
    servers.slackScript = () => undefined;
  });
});

describe("GET /notifications/sends", () => {
  test("filters by connection, run, status, channel and event type; pages; sees only the caller's workspace", async () => {
    const all = await h.ok(ws, "GET", "/notifications/sends?limit=100");
    expect(all.pagination.total).toBe(all.data.length);
    expect(all.data.length).toBeGreaterThanOrEqual(10);
    const sorted = [...all.data].sort((a: any, b: any) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1));
    expect(all.data.map((s: any) => s.id)).toEqual(sorted.map((s: any) => s.id));

    const failed = await h.ok(ws, "GET", "/notifications/sends?status=failed&limit=100");
    expect(failed.data.length).toBeGreaterThanOrEqual(3);
    expect(failed.data.every((s: any) => s.status === "failed")).toBe(true);
    const slack = await h.ok(ws, "GET", "/notifications/sends?channel=SLACK&eventType=PIPELINE_RUN_SUCCEEDED");
    expect(slack.data.map((s: any) => s.recipient)).toEqual(["C0SUCCESS1"]);
    const one = all.data[0];
    const byConn = await h.ok(ws, "GET", `/notifications/sends?clientId=${one.clientId}&limit=100`);
    expect(byConn.data.every((s: any) => s.clientId === one.clientId)).toBe(true);
    expect(byConn.data.length).toBeGreaterThanOrEqual(1);

    const page2 = await h.ok(ws, "GET", "/notifications/sends?limit=3&page=2");
    expect(page2.data.map((s: any) => s.id)).toEqual(all.data.slice(3, 6).map((s: any) => s.id));
    expect(page2.pagination).toEqual({ page: 2, limit: 3, total: all.pagination.total, totalPages: Math.ceil(all.pagination.total / 3) });

    const foreign = await h.ok(other, "GET", `/notifications/sends?runId=${one.runId}`);
    expect(foreign).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0 } });

    for (const [q, says] of [
      ["status=lost", "status: must be one of pending, sent, failed"],
      ["channel=FAX", "channel: must be one of EMAIL, SLACK, SMS"],
      ["limit=500", "limit: must be at most 100"],
    ]) {
      const r = await h.api(ws, "GET", `/notifications/sends?${q}`);
      expect(r.status).toBe(400);
      expect(r.body.message).toBe(says);
    }
  });

  test("the same records over GraphQL and tRPC", async () => {
    const rest = await h.ok(ws, "GET", "/notifications/sends?status=failed&limit=100");
    const g = await h.graphql(
      ws.apiKey,
      `query { notificationSends(status: failed, limit: 100) { data { id channel recipient status attempts error } pagination { total } } }`,
    );
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.notificationSends.data.map((s: any) => s.id)).toEqual(rest.data.map((s: any) => s.id));
    expect(g.body.data.notificationSends.pagination.total).toBe(rest.pagination.total);
    const t = await h.trpc(ws).notificationSends.list({ status: "failed", limit: 100 });
    expect(JSON.parse(JSON.stringify(t))).toEqual(rest);
    const bad = await h.trpc(ws).notificationSends.list({ status: "lost" as never }).catch((e) => e);
    expect((bad as TRPCError).code).toBe("BAD_REQUEST");
  });
});
