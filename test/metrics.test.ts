import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "ssh2";
import { parseConfig } from "../src/config";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { type Family, parsePrometheusText, sampleValue } from "./helpers/prometheus";
import { Receiver } from "./helpers/receiver";
import { createPipeline, ITEM_MAPPINGS, ITEMS_CSV, startUpload, waitForRun } from "./helpers/runs";

setDefaultTimeout(60_000);

/**
 * `GET /metrics` read as Prometheus reads it (a strict text-format parser,
 * test/helpers/prometheus.ts) after a run through REST, a webhook delivery
 * to a local receiver and hosted-SFTP logins with the ssh2 client: the
 * counters moved, and no label value is an id or a file name.
 */
const TOKEN = "metrics-token-0123456789abcdef";
let h: Harness;
let ws: TestWorkspace;
let receiver: Receiver;
let sftpPort: number;
const PASSWORD = "Corr3ct-Horse-Battery";

beforeAll(async () => {
  h = await Harness.start({ env: { METRICS_TOKEN: TOKEN, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } });
  h.clock.set(new Date(Math.floor(Date.now() / 1000) * 1000));
  ws = await h.workspace();
  receiver = await Receiver.start();
  sftpPort = await h.service.sftp.listen(0, "127.0.0.1");
});
afterAll(async () => {
  receiver.stop();
  await h.close();
});

async function scrape(): Promise<Map<string, Family>> {
  const res = await h.service.http.handle(new Request("http://localhost/metrics", { headers: { authorization: `Bearer ${TOKEN}` } }));
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  return parsePrometheusText(await res.text());
}

function sftpLogin(password: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const c = new Client();
    c.on("ready", () => {
      c.end();
      resolve(true);
    });
    c.on("error", (e: Error & { level?: string }) => (e.level === "client-authentication" ? resolve(false) : reject(e)));
    c.connect({ host: "127.0.0.1", port: sftpPort, username: "metrics-partner", password, tryKeyboard: false, readyTimeout: 20_000 });
  });
}

describe("GET /metrics", () => {
  test("with METRICS_TOKEN set: refused without the bearer token, with a request id in the error body", async () => {
    for (const headers of [{}, { authorization: "Bearer wrong-token-0123456789abcd" }, { authorization: TOKEN }] as Record<string, string>[]) {
      const res = await h.service.http.handle(new Request("http://localhost/metrics", { headers }));
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body.error).toBe("unauthorized");
      expect(body.message).toContain("METRICS_TOKEN");
      expect(body.requestId).toBe(res.headers.get("x-request-id")!);
    }
  });

  test("after a run, a webhook delivery and SFTP logins: the counters moved, labels are bounded", async () => {
    const before = await scrape();
    const hook = await h.ok(ws, "POST", "/webhooks", { name: "Ops", url: receiver.url });
    const { pipeline } = await createPipeline(h, ws, { mappings: { ...ITEM_MAPPINGS, validations: { onInvalidRow: "skip" } } });
    await h.ok(ws, "PATCH", `/pipelines/${pipeline.id}`, { webhookIds: [hook.id] });
    const run = await startUpload(h, ws, pipeline.id, "SKU,Qty,Name\na-1,3,Bolt\nb-2,x,Nut\nc-3,7,Washer\n");
    await waitForRun(h, ws, run.id, "completed");
    await waitFor("a webhook delivery", () => receiver.received.length >= 1);
    await h.ok(ws, "POST", "/connections", { name: "Metrics partner", type: "SFTP", sftpUsername: "metrics-partner", sftpPassword: PASSWORD });
    expect(await sftpLogin("not-the-password")).toBe(false);
    expect(await sftpLogin(PASSWORD)).toBe(true);
    await h.graphql(ws.apiKey, "{ pipelines { data { id } } }");
    await h.request("GET", `/trpc/pipelines.get?input=${encodeURIComponent(JSON.stringify({ id: pipeline.id }))}`, { key: ws.apiKey });
    await h.request("GET", "/no/such/route/pipe_123", { key: ws.apiKey });

    // The attempt is recorded after the receiver answered; the session gauge falls once the server sees the close.
    let after = await scrape();
    await waitFor("the attempt counted and the SFTP session closed", async () => {
      after = await scrape();
      return sampleValue(after, "fps_webhook_delivery_attempts_total", { outcome: "success" }) >= 1 && sampleValue(after, "fps_sftp_sessions_open") === 0;
    });
    const moved = (name: string, labels: Record<string, string> = {}) => sampleValue(after, name, labels) - sampleValue(before, name, labels);

    expect(moved("fps_runs_started_total", { direction: "inbound" })).toBe(1);
    expect(moved("fps_runs_finished_total", { direction: "inbound", status: "completed" })).toBe(1);
    expect(moved("fps_run_duration_seconds_count", { direction: "inbound" })).toBe(1);
    expect(moved("fps_rows_processed_total", { outcome: "valid" })).toBe(2);
    expect(moved("fps_rows_processed_total", { outcome: "skipped" })).toBe(1);
    expect(moved("fps_bytes_received_total", { door: "upload" })).toBe(Buffer.byteLength("SKU,Qty,Name\na-1,3,Bolt\nb-2,x,Nut\nc-3,7,Washer\n"));
    expect(moved("fps_webhook_delivery_attempts_total", { outcome: "success" })).toBeGreaterThanOrEqual(1);
    expect(moved("fps_sftp_logins_total", { method: "password", outcome: "failure" })).toBe(1);
    expect(moved("fps_sftp_logins_total", { method: "password", outcome: "success" })).toBe(1);
    expect(sampleValue(after, "fps_sftp_sessions_open")).toBe(0);

    // HTTP requests by surface, route template, method and status, with a duration histogram.
    expect(moved("fps_http_requests_total", { surface: "rest", route: "/pipelines/:id/runs", method: "POST", status: "200" })).toBe(1);
    expect(moved("fps_http_requests_total", { surface: "rest", route: "/pipeline-runs/:id", method: "GET", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(moved("fps_http_requests_total", { surface: "graphql", route: "/graphql", method: "POST", status: "200" })).toBe(1);
    expect(moved("fps_http_requests_total", { surface: "trpc", route: "/trpc/pipelines.get", method: "GET", status: "200" })).toBe(1);
    expect(moved("fps_http_requests_total", { surface: "rest", route: "unmatched", status: "404" })).toBe(1);
    expect(moved("fps_http_request_duration_seconds_count", { surface: "rest", route: "/pipelines/:id/runs", method: "POST" })).toBe(1);

    // The process defaults are there, and the families are typed.
    expect(sampleValue(after, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(after.get("fps_http_request_duration_seconds")?.type).toBe("histogram");
    expect(after.get("fps_jobs_waiting")?.type).toBe("gauge");
    expect(after.get("fps_jobs_oldest_waiting_age_seconds")?.type).toBe("gauge");
    expect(after.get("fps_smtp_messages_total")?.type).toBe("counter");
    expect(after.get("fps_notification_sends_total")?.type).toBe("counter");

    // Bounded labels: no id, no file name, no path.
    for (const f of after.values()) {
      for (const s of f.samples) {
        for (const v of Object.values(s.labels)) {
          expect(v).not.toMatch(/(pipe|run|wh|conn|ws|key|req)_[0-9a-z]{10,}|items\.csv|no\/such/);
        }
      }
    }
  });
});

describe("METRICS_TOKEN", () => {
  test("a token too short or with spaces stops start-up, naming the variable", () => {
    for (const bad of ["short", "has a space in it 0123456789"]) {
      expect(() => parseConfig({ METRICS_TOKEN: bad })).toThrow(/METRICS_TOKEN: must be 16 to 256 visible ASCII characters/);
    }
    expect(parseConfig({ METRICS_TOKEN: TOKEN }).metricsToken).toBe(TOKEN);
    expect(parseConfig({}).metricsToken).toBeNull();
  });
});

describe("job queue depth", () => {
  test("jobs due and not claimed are counted by kind, with the oldest one's age", async () => {
    // A service that claims nothing: the run's job waits.
    const idle = await Harness.start({ startJobs: false });
    try {
      const w = await idle.workspace();
      const { pipeline } = await createPipeline(idle, w);
      await startUpload(idle, w, pipeline.id, ITEMS_CSV);
      await Bun.sleep(1100);
      const res = await idle.service.http.handle(new Request("http://localhost/metrics"));
      expect(res.status).toBe(200);
      const m = parsePrometheusText(await res.text());
      expect(sampleValue(m, "fps_jobs_waiting", { kind: "run.process" })).toBe(1);
      expect(sampleValue(m, "fps_jobs_oldest_waiting_age_seconds", { kind: "run.process" })).toBeGreaterThanOrEqual(1);
    } finally {
      await idle.close();
    }
  });
});
