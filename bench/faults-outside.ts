/**
 * Fault scenarios of what the service talks to besides its database: an S3
 * server, a webhook receiver and an SMTP relay that go away and come back,
 * and a kill -9 while webhooks are being delivered. Run by bench/faults.ts.
 */
import { NotifyServers } from "../test/helpers/notify-servers";
import { Receiver } from "../test/helpers/receiver";
import { startS3 } from "../test/helpers/s3";
import { TcpProxy } from "../test/helpers/tcp-proxy";
import { DEFAULT_RETRY_SCHEDULE } from "../src/adapters/webhooks/port";
import { client, csv, faultUnderUploads, Instance, type Row, secs, settle, setup, sleep, Tally } from "./faults-lib";

/** How much faster than real time the webhook retry schedule runs: 1 h of outage takes 6 s. */
export const COMPRESSION = 600;

/** The default retry schedule, every delay divided by COMPRESSION (in ms, at least 1). */
export function compressedSchedule(): string {
  const unit = { s: 1000, m: 60_000, h: 3_600_000 } as const;
  return DEFAULT_RETRY_SCHEDULE.split(",")
    .map((d) => {
      const m = /^(\d+)([smh])$/.exec(d.trim());
      if (!m) throw new Error(`unexpected retry delay ${d}`);
      return `${Math.max(1, Math.round((Number(m[1]) * unit[m[2] as keyof typeof unit]) / COMPRESSION))}ms`;
    })
    .join(",");
}

/** S3 refuses connections for `ms` (a TCP proxy in front of s3rver) while uploads keep coming. */
export async function s3Down(ms: number): Promise<Row> {
  const s3 = await startS3("fps-faults");
  const target = new URL(s3.endpoint);
  const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port) });
  const s = await setup("sqlite", { env: { ...s3.env, S3_ENDPOINT: `http://127.0.0.1:${proxy.port}` } });
  const a = await Instance.start(s.env);
  const { t, r, recoverMs } = await faultUnderUploads(a, s, () => proxy.refuse(), () => proxy.restore(), ms);
  await a.stop();
  await proxy.close();
  await s3.stop();
  await s.drop();
  return [`S3 refuses for ${secs(ms)} (sqlite)`, t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(recoverMs), `${a.peakMiB} MiB`];
}

/** A webhook on the pipeline for its completed runs: the receiver's requests, by run id. */
async function hooked(url: string, key: string, pipelineId: string, receiver: Receiver) {
  const api = client(url, key);
  const hook = await api.json("POST", "/webhooks", { name: "Faults receiver", url: receiver.url, eventTypes: ["pipeline_run.completed"] });
  await api.json("PATCH", `/pipelines/${pipelineId}`, { webhookIds: [hook.id] });
  return {
    /** Requests per run id, and per event id (webhook-id). */
    counts() {
      const runs = new Map<string, number>();
      const events = new Map<string, number>();
      // A run's event sent under two webhook-ids is a duplicate a receiver cannot tell; one sent again under its own
      // webhook-id is the at-least-once retry that Standard Webhooks receivers de-duplicate by that id.
      const idsPerRun = new Map<string, Set<string>>();
      for (const r of receiver.received) {
        const runId = (JSON.parse(r.body) as { data?: { run?: { id?: string } } }).data?.run?.id ?? "";
        const id = r.headers["webhook-id"] ?? "";
        runs.set(runId, (runs.get(runId) ?? 0) + 1);
        events.set(id, (events.get(id) ?? 0) + 1);
        idsPerRun.set(runId, (idsPerRun.get(runId) ?? new Set()).add(id));
      }
      return {
        runs,
        events,
        duplicated: [...idsPerRun.values()].reduce((n, ids) => n + ids.size - 1, 0),
        again: [...events.values()].reduce((n, c) => n + c - 1, 0),
      };
    },
  };
}

/**
 * The receiver is down for an hour, on a retry schedule COMPRESSION times
 * faster than the default one (so 6 s stand for 1 h): every completed run's
 * event must arrive once it is back.
 */
export async function webhookDown(hours: number): Promise<Row> {
  const receiver = await Receiver.start();
  const s = await setup("sqlite", { env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCHEDULE: compressedSchedule() } });
  const a = await Instance.start(s.env);
  const hook = await hooked(a.url, s.key, s.pipelineId, receiver);
  const api = client(a.url, s.key);
  const t = new Tally();
  receiver.down();
  const downAt = performance.now();
  for (let i = 0; i < 20; i++) t.note(await api.upload(s.pipelineId, `wh-${i}.csv`, csv(200)), `wh-${i}.csv`);
  await sleep(Math.max(0, (hours * 3_600_000) / COMPRESSION - (performance.now() - downAt)));
  receiver.up();
  const t0 = performance.now();
  const all = () => [...t.accepted.keys()].every((id) => (hook.counts().runs.get(id) ?? 0) > 0);
  const r = await settle(a.url, s.key, s.pipelineId, t, { extra: all, timeoutMs: 300_000 });
  const c = hook.counts();
  const undelivered = [...t.accepted.keys()].filter((id) => !c.runs.has(id)).length;
  await a.stop();
  receiver.stop();
  await s.drop();
  const real = ((r.at - t0) * COMPRESSION) / 3_600_000;
  return [
    `webhook receiver down ${hours} h (schedule ${COMPRESSION}x faster, sqlite; ${c.again} requests sent again under their webhook-id)`,
    t.tried,
    `${r.lost} runs, ${undelivered} events`,
    c.duplicated,
    t.unavailable,
    t.other5xx,
    `${secs(r.at - t0)} (${real.toFixed(1)} h at the real schedule)`,
    `${a.peakMiB} MiB`,
  ];
}

/** kill -9 while the receiver holds webhook requests (each answered after 2 s), then a new instance. */
export async function killDuringDelivery(): Promise<Row> {
  const receiver = await Receiver.start();
  receiver.answer = () => ({ status: 200, body: "ok", delayMs: 2_000 });
  const s = await setup("sqlite", { env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCHEDULE: "1s,2s,4s,8s" } });
  const a = await Instance.start(s.env);
  const hook = await hooked(a.url, s.key, s.pipelineId, receiver);
  const api = client(a.url, s.key);
  const t = new Tally();
  for (let i = 0; i < 20; i++) t.note(await api.upload(s.pipelineId, `dl-${i}.csv`, csv(200)), `dl-${i}.csv`);
  while (receiver.received.length < 3) await sleep(20);
  const inFlight = receiver.received.length;
  await a.kill9();
  receiver.answer = () => ({ status: 200, body: "ok" });
  const t0 = performance.now();
  const b = await Instance.start(s.env);
  const all = () => [...t.accepted.keys()].every((id) => (hook.counts().runs.get(id) ?? 0) > 0);
  const r = await settle(b.url, s.key, s.pipelineId, t, { extra: all });
  const c = hook.counts();
  const undelivered = [...t.accepted.keys()].filter((id) => !c.runs.has(id)).length;
  await b.stop();
  receiver.stop();
  await s.drop();
  return [
    `kill -9 during webhook delivery (${inFlight} in flight, sqlite; ${c.again} sent again under their webhook-id)`,
    t.tried,
    `${r.lost} runs, ${undelivered} events`,
    c.duplicated,
    t.unavailable,
    t.other5xx,
    secs(r.at - t0),
    `${Math.max(a.peakMiB, b.peakMiB)} MiB`,
  ];
}

/** The SMTP relay refuses connections for `ms` while runs complete; each run's success mail must arrive once. */
export async function smtpDown(ms: number): Promise<Row> {
  const servers = await NotifyServers.start();
  const proxy = await TcpProxy.start({ host: "127.0.0.1", port: servers.smtpPort });
  const env = { ...servers.env(), NOTIFY_SMTP_URL: servers.env().NOTIFY_SMTP_URL!.replace(`:${servers.smtpPort}`, `:${proxy.port}`) };
  const s = await setup("sqlite", { env });
  const a = await Instance.start(s.env);
  const api = client(a.url, s.key);
  await api.json("PUT", `/notifications/preferences/${s.connectionId}`, {
    preferences: [{ eventType: "PIPELINE_RUN_SUCCEEDED", channel: "EMAIL", isEnabled: true, recipients: ["ops@faults-corp.com"] }],
  });
  const t = new Tally();
  proxy.refuse();
  const downAt = performance.now();
  for (let i = 0; i < 20; i++) t.note(await api.upload(s.pipelineId, `mail-${i}.csv`, csv(200)), `mail-${i}.csv`);
  await sleep(Math.max(0, ms - (performance.now() - downAt)));
  proxy.restore();
  const t0 = performance.now();
  const mailsOf = (id: string) => servers.mails.filter((m) => m.text.includes(id)).length;
  const all = () => [...t.accepted.keys()].every((id) => mailsOf(id) > 0);
  const r = await settle(a.url, s.key, s.pipelineId, t, { extra: all, timeoutMs: 300_000 });
  const unsent = [...t.accepted.keys()].filter((id) => mailsOf(id) === 0).length;
  const again = [...t.accepted.keys()].reduce((n, id) => n + Math.max(0, mailsOf(id) - 1), 0);
  await a.stop();
  await proxy.close();
  await servers.close();
  await s.drop();
  return [`SMTP relay refuses for ${secs(ms)} (sqlite)`, t.tried, `${r.lost} runs, ${unsent} mails`, again, t.unavailable, t.other5xx, secs(r.at - t0), `${a.peakMiB} MiB`];
}
