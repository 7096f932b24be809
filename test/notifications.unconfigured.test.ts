import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { createService } from "../src/app";
import { parseConfig } from "../src/config";
import { freshDatabase } from "./helpers/database";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { waitFor } from "./helpers/jobs";
import { NotifyServers } from "./helpers/notify-servers";
import { createPipeline, runToEnd } from "./helpers/runs";

/**
 * A channel the service is not configured for: reported once at start (a
 * warning), and each send over it recorded as failed with a message that
 * says what to set; nothing crashes and the run is not affected.
 */

let h: Harness;
let ws: TestWorkspace;

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
});
afterAll(() => h.close());

test("sends over unconfigured channels are recorded as failed, once each, with what to set; the run ends as it would", async () => {
  const f = await createPipeline(h, ws);
  await h.ok(ws, "PUT", `/notifications/preferences/${f.connection.id}`, {
    preferences: [
      { eventType: "PIPELINE_RUN_SUCCEEDED", channel: "EMAIL", isEnabled: true, recipients: ["ops@acme.test"] },
      { eventType: "PIPELINE_RUN_SUCCEEDED", channel: "SLACK", isEnabled: true, recipients: ["#ops"] },
      { eventType: "PIPELINE_RUN_SUCCEEDED", channel: "SMS", isEnabled: true, recipients: ["+15551234567"] },
    ],
  });
  const run = await runToEnd(h, ws, f.pipeline.id);
  expect(run.status).toBe("completed");
  let sends: any[] = [];
  await waitFor("three failed sends", async () => {
    sends = (await h.ok(ws, "GET", `/notifications/sends?runId=${run.id}`)).data;
    return sends.length === 3 && sends.every((s) => s.status === "failed");
  });
  const error = (c: string) => sends.find((s) => s.channel === c)?.error;
  expect(error("EMAIL")).toBe("EMAIL notifications are not configured on this service (set NOTIFY_SMTP_URL and NOTIFY_EMAIL_FROM)");
  expect(error("SLACK")).toBe("SLACK notifications are not configured on this service (set NOTIFY_SLACK_TOKEN)");
  expect(error("SMS")).toBe(
    "SMS notifications are not configured on this service (set NOTIFY_TWILIO_ACCOUNT_SID, NOTIFY_TWILIO_AUTH_TOKEN and NOTIFY_TWILIO_FROM)",
  );
  for (const s of sends) expect(s).toMatchObject({ attempts: 1, providerId: null, sentAt: null });
  // Still the run's own story.
  expect((await h.ok(ws, "GET", `/pipeline-runs/${run.id}`)).status).toBe("completed");
});

test("at start, each unconfigured channel is reported once as a warning; configured ones are not", async () => {
  const servers = await NotifyServers.start();
  const dataDir = mkdtempSync(join(tmpdir(), "fps-notify-"));
  const database = await freshDatabase(dataDir);
  const lines: { level: number; msg: string; channel?: string }[] = [];
  const log = pino({ level: "warn", base: undefined }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const { NOTIFY_SLACK_TOKEN, NOTIFY_SLACK_API_URL } = servers.env();
  const config = parseConfig({
    DATA_DIR: dataDir,
    ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    NOTIFY_SLACK_TOKEN: NOTIFY_SLACK_TOKEN!,
    NOTIFY_SLACK_API_URL: NOTIFY_SLACK_API_URL!,
  });
  const service = await createService({ config, db: database.db, log });
  try {
    const notify = lines.filter((l) => l.channel);
    expect(notify.map((l) => [l.level, l.channel]).sort()).toEqual([
      [40, "EMAIL"],
      [40, "SMS"],
    ]);
    expect(notify.find((l) => l.channel === "EMAIL")?.msg).toBe(
      "EMAIL notifications are not configured on this service (set NOTIFY_SMTP_URL and NOTIFY_EMAIL_FROM); its notifications will be recorded as failed",
    );
    expect(service.svc.notify.SLACK).not.toBeNull();
  } finally {
    await service.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    await servers.close();
  }
});
