import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { HostResolver } from "../src/adapters/webhooks/port";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { Receiver } from "./helpers/receiver";
import { createPipeline, startUpload, waitForRun } from "./helpers/runs";

// Harness start (a Postgres database, migrations, the job queue) can take seconds on a busy machine.
setDefaultTimeout(30_000);

/**
 * Targets on loopback, private, link-local, unique-local, unspecified,
 * multicast and IPv4-mapped addresses, with the service's default
 * (WEBHOOK_ALLOW_PRIVATE_TARGETS unset): refused on create, update and
 * subscribe, and again at send time after resolving the name. The
 * resolver is replaced here only where a test needs a name that changes its
 * answer (DNS rebinding) or one the system cannot resolve.
 */
let h: Harness;
let ws: TestWorkspace;
let receiver: Receiver;
let systemResolve: HostResolver;

beforeAll(async () => {
  h = await Harness.start({ env: { WEBHOOK_RETRY_SCHEDULE: "100ms,100ms,100ms" } });
  ws = await h.workspace();
  receiver = await Receiver.start();
  systemResolve = h.svc.webhooks.resolve;
});

afterAll(async () => {
  receiver.stop();
  await h.close();
});

const REFUSED = [
  ["loopback", "http://127.0.0.1:8080/hook"],
  ["loopback (another 127/8 address)", "http://127.10.0.1/hook"],
  ["loopback IPv6", "http://[::1]:8080/hook"],
  ["private 10/8", "https://10.0.0.5/hook"],
  ["private 172.16/12", "https://172.20.1.1/hook"],
  ["private 192.168/16", "http://192.168.1.10/hook"],
  ["link-local (cloud metadata)", "http://169.254.169.254/latest/meta-data"],
  ["link-local IPv6", "http://[fe80::1]/hook"],
  ["unique-local IPv6", "http://[fd00::1]/hook"],
  ["unspecified", "http://0.0.0.0:3000/hook"],
  ["unspecified IPv6", "http://[::]/hook"],
  ["multicast", "http://224.0.0.1/hook"],
  ["IPv4-mapped IPv6", "http://[::ffff:127.0.0.1]/hook"],
  ["IPv4 written as one number", "http://2130706433/hook"],
  ["carrier-grade NAT", "http://100.64.0.1/hook"],
  ["localhost", "http://localhost:3000/hook"],
  ["a .localhost name", "http://api.localhost/hook"],
] as const;

describe("on create, update and subscribe", () => {
  test.each(REFUSED)("%s is refused with a 400 naming the member, and nothing is stored", async (_, url) => {
    const before = (await h.ok(ws, "GET", "/webhooks")).pagination.total;
    const res = await h.api(ws, "POST", "/webhooks", { name: "Sneaky", url });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_input");
    expect(res.body.message).toMatch(/^url: .*WEBHOOK_ALLOW_PRIVATE_TARGETS=true/);
    const sub = await h.api(ws, "POST", "/webhooks/zapier/pipeline-run-events/subscribe", { targetUrl: url });
    expect(sub.status).toBe(400);
    expect(sub.body.message).toMatch(/^targetUrl: /);
    expect((await h.ok(ws, "GET", "/webhooks")).pagination.total).toBe(before);
  });

  test("a public address is accepted; moving it to a private one is refused and changes nothing", async () => {
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Public", url: "https://8.8.8.8/hook" });
    const res = await h.api(ws, "PATCH", `/webhooks/${hook.id}`, { url: "http://10.1.2.3/hook", name: "Moved" });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^url: 10\.1\.2\.3 is a private address/);
    expect(await h.ok(ws, "GET", `/webhooks/${hook.id}`)).toMatchObject({ url: "https://8.8.8.8/hook", name: "Public" });
  });

  test("a name that resolves to a private address is refused; one that does not resolve now is left to the send-time check", async () => {
    h.svc.webhooks.resolve = async (host) =>
      host === "intranet.example.com" ? [{ address: "10.0.0.7", family: 4 }] : Promise.reject(new Error(`${host}: ENOTFOUND`));
    try {
      const res = await h.api(ws, "POST", "/webhooks", { name: "Intranet", url: "https://intranet.example.com/hook" });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe(
        "url: intranet.example.com resolves to 10.0.0.7, a private address; loopback, private, link-local and other non-public targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true",
      );
      expect((await h.api(ws, "POST", "/webhooks", { name: "Later", url: "https://not-yet.example.com/hook" })).status).toBe(200);
    } finally {
      h.svc.webhooks.resolve = systemResolve;
    }
  });
});

describe("at send time, after resolving", () => {
  async function runThrough(hookUrl: string) {
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Target", url: hookUrl });
    const { pipeline } = await createPipeline(h, ws);
    await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: [hook.id] });
    const run = await startUpload(h, ws, pipeline.id);
    await waitForRun(h, ws, run.id, "completed");
    let rows: any[] = [];
    await waitFor("a delivery", async () => {
      rows = (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${run.id}`)).data;
      return rows.length > 0;
    });
    return { hook, rows };
  }

  test("a name that resolved to a public address on save and to 127.0.0.1 now (DNS rebinding) is refused, recorded and not retried", async () => {
    let calls = 0;
    h.svc.webhooks.resolve = async (host) => {
      if (host !== "rebind.example.com") throw new Error("ENOTFOUND");
      calls++;
      return calls === 1 ? [{ address: "93.184.215.14", family: 4 }] : [{ address: "127.0.0.1", family: 4 }];
    };
    try {
      const port = receiver.port;
      const { rows } = await runThrough(`http://rebind.example.com:${port}/hook`);
      await Bun.sleep(500);
      const all = (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${rows[0].pipelineRunId}`)).data;
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ success: false, statusCode: null, nextAttemptAt: null, attempt: 1 });
      expect(all[0].error).toBe(
        "refused: 127.0.0.1 is a loopback address (rebind.example.com resolves to it); loopback, private, link-local and other non-public targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true",
      );
      expect(receiver.received).toHaveLength(0);
    } finally {
      h.svc.webhooks.resolve = systemResolve;
    }
  });

  test("localhost, resolved by the system resolver, is refused at send time too (a webhook saved while private targets were allowed)", async () => {
    const settings = h.svc.webhooks.settings;
    settings.allowPrivateTargets = true;
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Local", url: `http://localhost:${receiver.port}/hook` });
    settings.allowPrivateTargets = false;
    const { pipeline } = await createPipeline(h, ws);
    await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: [hook.id] });
    const run = await startUpload(h, ws, pipeline.id);
    await waitForRun(h, ws, run.id, "completed");
    await waitFor("a delivery", async () => (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${run.id}`)).data.length > 0);
    await Bun.sleep(400);
    const all = (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${run.id}`)).data;
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ success: false, statusCode: null, nextAttemptAt: null });
    expect(all[0].error).toMatch(/^refused: (127\.0\.0\.1|::1) is a loopback address \(localhost resolves to it\)/);
    expect(receiver.received).toHaveLength(0);
  });

  test("when allowed, the call goes to the resolved address itself, with the name as Host (no second look-up)", async () => {
    const settings = h.svc.webhooks.settings;
    settings.allowPrivateTargets = true;
    h.svc.webhooks.resolve = async (host) => (host === "receiver.internal.test" ? [{ address: "127.0.0.1", family: 4 }] : Promise.reject(new Error("ENOTFOUND")));
    try {
      const { rows } = await runThrough(`http://receiver.internal.test:${receiver.port}/hook`);
      expect(rows[0]).toMatchObject({ success: true, statusCode: 200 });
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]!.headers.host).toBe(`receiver.internal.test:${receiver.port}`);
    } finally {
      settings.allowPrivateTargets = false;
      h.svc.webhooks.resolve = systemResolve;
    }
  });

  test("a name that does not resolve is an ordinary failure: recorded and retried", async () => {
    h.svc.webhooks.resolve = async () => {
      throw new Error("getaddrinfo ENOTFOUND");
    };
    try {
      const { rows } = await runThrough("https://nowhere.example.com/hook");
      expect(rows[0].error).toMatch(/^could not resolve nowhere\.example\.com: /);
      expect(rows[0].nextAttemptAt).not.toBeNull();
      await waitFor("retried", async () => (await h.ok(ws, "GET", `/webhooks/deliveries?pipelineRunId=${rows[0].pipelineRunId}`)).data.length >= 2);
    } finally {
      h.svc.webhooks.resolve = systemResolve;
    }
  });
});
