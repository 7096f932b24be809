/**
 * The fault harness: the real service as separate processes, faults done to
 * it from outside, and one table. `bun bench/faults.ts [rounds]`;
 * `FAULTS_ONLY=blip,s3` runs the scenarios whose names contain those words
 * (and then writes no results file).
 *
 * - kill -9 during uploads and during processing (SQLite and Postgres);
 * - Postgres through a TCP proxy (test/helpers/tcp-proxy.ts) that refuses,
 *   resets or stalls connections, for a blip and a longer outage, while
 *   uploads keep coming;
 * - two instances on one Postgres with one killed;
 * - SIGTERM while uploads and runs are in flight, then a new instance;
 * - SIGTERM while SFTP uploads are in flight, and kill -9 while runs are
 *   delivered to a customer's SFTP server (bench/faults-sftp.ts);
 * - S3, a webhook receiver and an SMTP relay down then up, and kill -9 while
 *   webhooks are being delivered (bench/faults-outside.ts);
 * - 200 concurrent uploads and 2,000 concurrent reads.
 *
 * Columns: tried (uploads or requests sent), lost (uploads answered 200
 * whose run never completed; for deliveries also the events or mails that
 * never arrived), duplicated (runs beyond one per uploaded file; for
 * deliveries the mails that arrived again, and the events that arrived
 * under a second webhook-id: one sent again under its own id is the
 * at-least-once retry receivers de-duplicate, counted in the row's label), 503 (answers
 * "unavailable", with Retry-After), 5xx (any other 5xx), time to recover
 * (from the end of the fault to every accepted run completed, every
 * delivery arrived and /readyz 200), peak RSS (highest VmHWM of the service
 * processes). Postgres from BENCH_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TcpProxy } from "../test/helpers/tcp-proxy";
import { client, csv, faultUnderUploads, Instance, PG_ADMIN, type Row, secs, type Setup, settle, setup, sleep, steadyUploads, Tally } from "./faults-lib";
import { killDuringDelivery, s3Down, smtpDown, webhookDown } from "./faults-outside";
import { killDuringSftpDelivery, sigtermSftp } from "./faults-sftp";
import { machine, ROOT, table, VERSION } from "./lib";

const ROUNDS = Number(process.argv[2] ?? 3);
const rows: Row[] = [];

/**
 * `ROUNDS` times: an instance, `fault` done to it (it ends with the
 * instance killed), a new instance that must finish every accepted run.
 * One row: the longest recovery and the highest peak over the rounds.
 */
async function killRounds(dialect: "sqlite" | "pg", what: string, fault: (a: Instance, s: Setup, t: Tally, round: number) => Promise<void>) {
  const s = await setup(dialect);
  const t = new Tally();
  let recover = 0;
  let peak = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const a = await Instance.start(s.env);
    await fault(a, s, t, round);
    peak = Math.max(peak, a.peakMiB);
    const t0 = performance.now();
    const b = await Instance.start(s.env);
    const r = await settle(b.url, s.key, s.pipelineId, t);
    recover = Math.max(recover, r.at - t0);
    peak = Math.max(peak, b.peakMiB);
    await b.stop();
  }
  const b = await Instance.start(s.env);
  const r = await settle(b.url, s.key, s.pipelineId, t);
  await b.stop();
  rows.push([`${what} (${dialect}, ${ROUNDS} rounds)`, t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(recover), `${peak} MiB`]);
  await s.drop();
}

/** 10 uploads of 20,000 rows each, killed 150 ms in. */
const killDuringUpload = (dialect: "sqlite" | "pg") =>
  killRounds(dialect, "kill -9 during upload", async (a, s, t, round) => {
    const api = client(a.url, s.key);
    const body = csv(20_000);
    const uploads = Array.from({ length: 10 }, (_, i) => {
      const name = `up-${round}-${i}.csv`;
      return api.upload(s.pipelineId, name, body).then((r) => t.note(r, name));
    });
    await sleep(150);
    await a.kill9();
    await Promise.all(uploads);
  });

/** 10 uploads of 50,000 rows each, killed once a run is being processed. */
const killDuringProcessing = (dialect: "sqlite" | "pg") =>
  killRounds(dialect, "kill -9 during processing", async (a, s, t, round) => {
    const api = client(a.url, s.key);
    const body = csv(50_000);
    for (let i = 0; i < 10; i++) {
      const name = `proc-${round}-${i}.csv`;
      t.note(await api.upload(s.pipelineId, name, body), name);
    }
    for (let i = 0; i < 200; i++) {
      const page = await api.json("GET", `/pipeline-runs?pipelineId=${s.pipelineId}&status=processing&limit=1`).catch(() => null);
      if ((Array.isArray(page) ? page : (page?.data ?? [])).length > 0) break;
      await sleep(20);
    }
    await a.kill9();
  });

/** Uploads every 100 ms through a Postgres proxy fault of `ms`, then restores it. */
async function proxyFault(label: string, fault: (p: TcpProxy) => void, ms: number) {
  const pg = new URL(PG_ADMIN);
  const proxy = await TcpProxy.start({ host: pg.hostname, port: Number(pg.port || 5432) });
  const s = await setup("pg", { via: proxy });
  const a = await Instance.start(s.env);
  const { t, r, recoverMs } = await faultUnderUploads(a, s, () => fault(proxy), () => proxy.restore(), ms);
  // The process must have lived through it: a supervisor restart does not count as recovered.
  const answers = `slowest answer ${secs(t.slowestMs)}, ${t.unanswered} unanswered`;
  const label2 = a.alive ? `${label}; ${answers}` : `${label} — the process exited; ${answers}`;
  await a.stop();
  await proxy.close();
  rows.push([label2, t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(recoverMs), `${a.peakMiB} MiB`]);
  await s.drop();
}

async function twoInstancesOneKilled() {
  const s = await setup("pg");
  const [a, b] = [await Instance.start(s.env), await Instance.start(s.env)];
  const t = new Tally();
  const api = client(a.url, s.key);
  const body = csv(50_000);
  for (let i = 0; i < 20; i++) t.note(await api.upload(s.pipelineId, `two-${i}.csv`, body), `two-${i}.csv`);
  await sleep(300);
  await a.kill9();
  const t0 = performance.now();
  const r = await settle(b.url, s.key, s.pipelineId, t);
  await b.stop();
  rows.push(["two instances, one killed (pg)", t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(r.at - t0), `${Math.max(a.peakMiB, b.peakMiB)} MiB`]);
  await s.drop();
}

/**
 * SIGTERM while uploads keep coming and runs are processed: the instance
 * stops taking work, hands back what it cannot finish in time, and a new
 * instance finishes every run it accepted. Also: how long the stop took.
 */
async function sigtermUnderLoad(dialect: "sqlite" | "pg") {
  const s = await setup(dialect);
  const a = await Instance.start(s.env);
  const t = new Tally();
  const uploads = steadyUploads(client(a.url, s.key), s.pipelineId, t, "term", csv(50_000), 50);
  await sleep(3_000);
  const s0 = performance.now();
  await a.stop();
  const stopMs = performance.now() - s0;
  await uploads.stop();
  const t0 = performance.now();
  const b = await Instance.start(s.env);
  const r = await settle(b.url, s.key, s.pipelineId, t);
  await b.stop();
  const refused = t.tried - t.accepted.size - t.unavailable - t.other5xx;
  rows.push([
    `SIGTERM under load (${dialect}; stopped in ${secs(stopMs)}, ${refused} uploads cut or refused)`,
    t.tried,
    r.lost,
    r.duplicated,
    t.unavailable,
    t.other5xx,
    secs(r.at - t0),
    `${Math.max(a.peakMiB, b.peakMiB)} MiB`,
  ]);
  await s.drop();
}

async function load() {
  const s = await setup("sqlite");
  const a = await Instance.start(s.env);
  const api = client(a.url, s.key);
  const t = new Tally();
  const body = csv(200);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 200 }, (_, i) => api.upload(s.pipelineId, `load-${i}.csv`, body).then((r) => t.note(r, `load-${i}.csv`))));
  const r = await settle(a.url, s.key, s.pipelineId, t);
  rows.push(["200 concurrent uploads (sqlite)", t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(r.at - t0), `${a.peakMiB} MiB`]);
  const reads = new Tally();
  const headers = { "x-api-key": s.key, "service-version": VERSION };
  const t1 = performance.now();
  await Promise.all(
    Array.from({ length: 2_000 }, async () => {
      const res = await fetch(`${a.url}/pipelines/${s.pipelineId}`, { headers }).catch(() => null);
      reads.note({ status: res?.status ?? 0 }, "");
      await res?.arrayBuffer();
    }),
  );
  const readMs = performance.now() - t1;
  await a.stop();
  rows.push(["2,000 concurrent reads (sqlite)", reads.tried, "-", "-", reads.unavailable, reads.other5xx, `${secs(readMs)} (all answered)`, `${a.peakMiB} MiB`]);
  await s.drop();
}

const resetThrice = (p: TcpProxy) => {
  p.reset();
  setTimeout(() => p.reset(), 1_000);
  setTimeout(() => p.reset(), 2_000);
};

const only = process.env.FAULTS_ONLY?.split(",");
const scenarios: [string, () => Promise<void>][] = [
  ["kill-upload-sqlite", () => killDuringUpload("sqlite")],
  ["kill-upload-pg", () => killDuringUpload("pg")],
  ["kill-processing-sqlite", () => killDuringProcessing("sqlite")],
  ["kill-processing-pg", () => killDuringProcessing("pg")],
  ["blip", () => proxyFault("Postgres refuses for 3 s (blip)", (p) => p.refuse(), 3_000)],
  ["outage", () => proxyFault("Postgres refuses for 30 s (outage)", (p) => p.refuse(), 30_000)],
  ["reset", () => proxyFault("Postgres connections reset (3 times, 1 s apart)", resetThrice, 3_000)],
  ["stall", () => proxyFault("Postgres stalls for 10 s", (p) => p.stall(), 10_000)],
  ["stall-long", () => proxyFault("Postgres stalls for 60 s", (p) => p.stall(), 60_000)],
  ["two", twoInstancesOneKilled],
  ["sigterm-sqlite", () => sigtermUnderLoad("sqlite")],
  ["sigterm-pg", () => sigtermUnderLoad("pg")],
  ["sigterm-sftp-sqlite", async () => void rows.push(await sigtermSftp("sqlite"))],
  ["sigterm-sftp-pg", async () => void rows.push(await sigtermSftp("pg"))],
  ["s3", async () => void rows.push(await s3Down(10_000))],
  ["webhook", async () => void rows.push(await webhookDown(1))],
  ["kill-delivery", async () => void rows.push(await killDuringDelivery())],
  ["kill-sftp-delivery-sqlite", async () => void rows.push(await killDuringSftpDelivery("sqlite"))],
  ["kill-sftp-delivery-pg", async () => void rows.push(await killDuringSftpDelivery("pg"))],
  ["smtp", async () => void rows.push(await smtpDown(30_000))],
  ["load", load],
];
for (const [name, run] of scenarios) {
  if (only && !only.some((o) => name.includes(o))) continue;
  const t0 = performance.now();
  try {
    await run();
  } catch (e) {
    rows.push([name, "error", String((e as Error).message).slice(0, 80), "", "", "", "", ""]);
  }
  console.error(`${name}: ${secs(performance.now() - t0)}`);
}

const out = table(["fault", "tried", "lost", "duplicated", "503", "5xx", "time to recover", "peak RSS"], rows);
console.log(out);
if (!only) {
  writeFileSync(join(ROOT, "bench", "results", "faults.md"), `# Fault harness\n\n\`bun bench/faults.ts ${ROUNDS}\` on ${machine()}.\n\n${out}\n`);
}
