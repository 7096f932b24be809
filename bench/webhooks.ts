/**
 * Issue 9 benchmark: run events fanned out to local webhook receivers.
 * 10,000 run events (each run acknowledged over REST, the transition that
 * enqueues its `run.event` job) x 5 webhooks linked to the pipeline =
 * 50,000 signed deliveries to 5 Bun.serve receivers in this process.
 * Reports deliveries/s and the time from the event's enqueue (its
 * `timestamp`, set in the acknowledging transaction) to receipt, p50/p99.
 * Baseline in the same run: the same number of signed POSTs sent straight
 * from this process (node:http keep-alive, the service's job concurrency in
 * flight), i.e. the HTTP + signing ceiling of this machine without the
 * queue and the delivery log. Embedded default (SQLite), service as its own
 * process; with BENCH_DATABASE_URL (a Postgres server URL) the service runs on
 * a fresh database there instead. Writes bench/results/webhooks.md
 * (webhooks-postgres.md on Postgres).
 *   bun bench/webhooks.ts [events=10000] [receivers=5]
 */
import http from "node:http";
import { availableParallelism, loadavg } from "node:os";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { Webhook } from "standardwebhooks";
import { fmt, machine, ROOT, startService, table, VERSION } from "./lib";

const EVENTS = Number(process.argv[2] ?? 10_000);
const RECEIVERS = Number(process.argv[3] ?? 5);
const CLIENTS = 8;
/** After the burst: events at a steady rate below capacity, for the latency of one event when no backlog has built. */
const PACED = 300;
const PACE_PER_S = 10;
const jobConcurrency = 2 * availableParallelism();

interface Receipt {
  at: number;
  eventAt: number;
  id: string;
}

/** One receiver: records receipt time and the event's timestamp; 204 fast. */
function receiver(receipts: Receipt[]) {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const at = Date.now();
      const e = JSON.parse(body) as { id: string; timestamp: string };
      receipts.push({ at, eventAt: Date.parse(e.timestamp), id: req.headers.get("webhook-id") ?? e.id });
      return new Response(null, { status: 204 });
    },
  });
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (i < items.length) await fn(items[i++]!);
  }));
}

/** On Postgres: a fresh database on BENCH_DATABASE_URL's server, dropped at the end. */
const admin = process.env.BENCH_DATABASE_URL;
let pgEnv: Record<string, string> = {};
let dropDatabase = async () => {};
if (admin) {
  const name = `fps_bench_webhooks_${Date.now().toString(36)}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  pgEnv = { DATABASE_URL: url.toString(), ENCRYPTION_KEY: randomBytes(32).toString("base64") };
  dropDatabase = async () => {
    await sql.unsafe(`drop database if exists ${name} with (force)`);
    await sql.end();
  };
}
const database = admin ? "Postgres (a fresh database on the local server)" : "the embedded default (SQLite, `synchronous = FULL`)";

// Any free SFTP and SMTP ports: another service may hold the defaults on this machine.
const svc = await startService({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", JOB_CONCURRENCY: String(jobConcurrency), SFTP_PORT: "0", SMTP_PORT: "0", ...pgEnv });
const loadAtStart = loadavg()[0]!;
const receipts: Receipt[][] = Array.from({ length: RECEIVERS }, () => []);
const servers = receipts.map((r) => receiver(r));
const headers = { "x-api-key": svc.env.API_KEY!, "service-version": VERSION };
try {
  // Setup (not measured): a pipeline and EVENTS + PACED completed runs of a two-line CSV.
  const conn = await svc.api("POST", "/connections", { name: "Bench feed", type: "SFTP", useHostedSFTP: true });
  const schema = await svc.api("POST", "/schemas", { name: "Bench rows", definition: { type: "object", properties: { a: { type: "string" } } } });
  const pipeline = await svc.api("POST", "/pipelines", { name: "Bench", clientId: conn.id, schemaId: schema.id, mappings: { fieldMappings: [{ source: "a", target: "a" }] } });
  const t0setup = performance.now();
  const runIds: string[] = [];
  await pool(
    Array.from({ length: EVENTS + PACED }, (_, i) => i),
    CLIENTS,
    async (i) => {
      const form = new FormData();
      form.append("file", new Blob([`a\nrow ${i}\n`], { type: "text/csv" }), `f${i}.csv`);
      const res = await fetch(`${svc.url}/pipelines/${pipeline.id}/runs`, { method: "POST", headers, body: form });
      if (!res.ok) throw new Error(`upload ${i}: ${res.status} ${await res.text()}`);
      runIds.push(((await res.json()) as { id: string }).id);
    },
  );
  for (;;) {
    const page = await svc.api("GET", `/pipeline-runs/pipeline/${pipeline.id}?status=completed&limit=1`);
    if (page.pagination.total >= EVENTS + PACED) break;
    await Bun.sleep(500);
  }
  const setupS = (performance.now() - t0setup) / 1000;
  console.log(`setup: ${EVENTS + PACED} runs completed in ${setupS.toFixed(1)} s`);
  const pacedIds = runIds.splice(EVENTS);

  // The webhooks, linked now so that the setup's completed events go nowhere.
  const secrets: string[] = [];
  const hookIds: string[] = [];
  for (const [i, s] of servers.entries()) {
    const hook = await svc.api("POST", "/webhooks", { name: `Receiver ${i}`, url: `http://127.0.0.1:${s.port}/hook`, eventTypes: ["pipeline_run.acknowledged"] });
    secrets.push(hook.secret);
    hookIds.push(hook.id);
  }
  await svc.api("PATCH", `/pipelines/${pipeline.id}`, { webhookIds: hookIds });

  const acknowledge = async (id: string) => {
    const res = await fetch(`${svc.url}/pipeline-runs/${id}/status`, {
      method: "PATCH",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ status: "acknowledged" }),
    });
    if (!res.ok) throw new Error(`acknowledge ${id}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };

  // Measured: acknowledge every run (one event each) and wait for every delivery.
  const total = EVENTS * RECEIVERS;
  const t0 = Date.now();
  await pool(runIds, CLIENTS, acknowledge);
  const ackS = (Date.now() - t0) / 1000;
  const received = () => receipts.reduce((n, r) => n + r.length, 0);
  const deadline = Date.now() + 60 * 60_000;
  while (received() < total && Date.now() < deadline) await Bun.sleep(100);
  const all = receipts.flat();
  const last = Math.max(...all.map((r) => r.at));
  const wallS = (last - t0) / 1000;
  const latency = all.map((r) => r.at - r.eventAt).sort((a, b) => a - b);
  const duplicates = receipts.reduce((n, r) => n + (r.length - new Set(r.map((x) => x.id)).size), 0);
  // The last rows are committed just after their receipt.
  let logged = 0;
  for (let i = 0; i < 100 && logged < all.length; i++) {
    logged = (await svc.api("GET", "/webhooks/deliveries?limit=1")).pagination.total;
    if (logged < all.length) await Bun.sleep(100);
  }
  const failed = (await svc.api("GET", "/webhooks/deliveries?success=false&limit=1")).pagination.total;
  console.log(`service: ${all.length}/${total} in ${wallS.toFixed(1)} s`);

  // Paced: PACE_PER_S events a second, once the burst has drained.
  for (const r of receipts) r.length = 0;
  const p0 = Date.now();
  await Promise.all(
    pacedIds.map(async (id, i) => {
      await Bun.sleep(Math.max(0, p0 + (i * 1000) / PACE_PER_S - Date.now()));
      await acknowledge(id);
    }),
  );
  while (received() < PACED * RECEIVERS && Date.now() < deadline) await Bun.sleep(50);
  const paced = receipts.flat();
  const pacedLatency = paced.map((r) => r.at - r.eventAt).sort((a, b) => a - b);
  for (const r of receipts) r.length = 0;
  console.log(`paced: ${paced.length}/${PACED * RECEIVERS}`);

  // Baseline: the same number of signed POSTs straight from this process.
  const body = JSON.stringify({ id: "evt_baseline", type: "pipeline_run.acknowledged", timestamp: new Date().toISOString(), data: { run: { id: "run_x" } } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const signers = secrets.map((s) => new Webhook(s));
  const before = received();
  const b0 = Date.now();
  await pool(
    Array.from({ length: total }, (_, i) => i),
    jobConcurrency,
    (i) =>
      new Promise<void>((resolve, reject) => {
        const r = i % RECEIVERS;
        const now = new Date();
        const req = http.request(
          { host: "127.0.0.1", port: servers[r]!.port, path: "/hook", method: "POST", agent, headers: {
            "content-type": "application/json",
            "webhook-id": `evt_b${i}`,
            "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
            "webhook-signature": signers[r]!.sign(`evt_b${i}`, now, body),
          } },
          (res) => {
            res.resume();
            res.on("end", () => resolve());
          },
        );
        req.on("error", reject);
        req.end(body);
      }),
  );
  const baselineS = (Date.now() - b0) / 1000;
  agent.destroy();
  if (received() - before !== total) throw new Error("baseline lost requests");

  const md = `# Webhooks: run events fanned out to local receivers

\`bun bench/webhooks.ts ${EVENTS} ${RECEIVERS}\` on ${machine()}.
Database: ${database}; the service as its own process with
\`JOB_CONCURRENCY=${jobConcurrency}\` (the default on this machine), ${RECEIVERS} Bun.serve receivers in the benchmark's process
answering 204. ${fmt(EVENTS)} runs were made first (not measured); then each was
acknowledged over REST (${CLIENTS} clients at once), which enqueues one \`run.event\` job in the acknowledging
transaction; the ${RECEIVERS} webhooks linked to the pipeline each get every event: ${fmt(total)} deliveries. Per event:
the \`run.event\` job stores the body and enqueues one \`webhook.deliver\` job, which sends the ${RECEIVERS} signed POSTs side by
side and records ${RECEIVERS} rows in the delivery log in one transaction.

| | deliveries | wall time | deliveries/s | enqueue to receipt p50 | p99 | max |
|---|---|---|---|---|---|---|
| service (queue, fan-out, sign, send, log) | ${fmt(all.length)} of ${fmt(total)} | ${wallS.toFixed(1)} s | ${fmt(all.length / wallS)} | ${fmt(pct(latency, 50))} ms | ${fmt(pct(latency, 99))} ms | ${fmt(latency.at(-1)!)} ms |
| service, paced: ${PACED} events at ${PACE_PER_S}/s after the burst | ${fmt(paced.length)} of ${fmt(PACED * RECEIVERS)} | | ${fmt(PACE_PER_S * RECEIVERS)} offered | ${fmt(pct(pacedLatency, 50))} ms | ${fmt(pct(pacedLatency, 99))} ms | ${fmt(pacedLatency.at(-1)!)} ms |
| baseline: signed POSTs sent directly, ${jobConcurrency} in flight | ${fmt(total)} | ${baselineS.toFixed(1)} s | ${fmt(total / baselineS)} | | | |

- The ${fmt(EVENTS)} acknowledgements themselves took ${ackS.toFixed(1)} s (${fmt(EVENTS / ackS)} events/s enqueued); deliveries ran alongside.
- "Enqueue to receipt" is the receiver's clock at receipt minus the event's \`timestamp\` (set in the transaction that
  enqueued it): it includes the wait in the queue behind the events acknowledged before it, so p50/p99 grow with the backlog
  a burst of ${fmt(EVENTS)} events builds. The paced row is the latency of one event when the service keeps up.
- Duplicate receipts: ${duplicates}. Failed attempts in the log: ${failed}. Attempts in the log: ${fmt(logged)}.
- Setup: ${fmt(EVENTS + PACED)} uploads processed in ${setupS.toFixed(1)} s.
- Load average (1 min) at start ${loadAtStart.toFixed(1)}, at the end ${loadavg()[0]!.toFixed(1)}: other work on the same cores shows here and in the baseline.
`;
  writeFileSync(join(ROOT, "bench", "results", admin ? "webhooks-postgres.md" : "webhooks.md"), md);
  console.log(md);
} finally {
  for (const s of servers) s.stop(true);
  await svc.stop();
  await dropDatabase();
}
