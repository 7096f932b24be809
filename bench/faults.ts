/**
 * The fault harness: the real service as separate processes, faults done to
 * it from outside, and one table. `bun bench/faults.ts [rounds]`.
 *
 * - kill -9 during uploads and during processing (SQLite and Postgres);
 * - Postgres through a TCP proxy (test/helpers/tcp-proxy.ts) that refuses,
 *   resets or stalls connections, for a blip and a longer outage, while
 *   uploads keep coming;
 * - two instances on one Postgres with one killed;
 * - 200 concurrent uploads and 2,000 concurrent reads.
 *
 * Columns: tried (uploads or requests sent), lost (uploads answered 200
 * whose run never completed), duplicated (runs beyond one per uploaded
 * file), 503 (answers "unavailable", with Retry-After), 5xx (any other
 * 5xx), time to recover (from the end of the fault to every accepted run
 * completed and /readyz 200), peak RSS (highest VmHWM of the service
 * processes). Postgres from BENCH_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { TcpProxy } from "../test/helpers/tcp-proxy";
import { csvRow, COLUMNS, machine, ROOT, table, tempDir, VERSION } from "./lib";

const ROUNDS = Number(process.argv[2] ?? 3);
const PG_ADMIN = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const SCHEMA = {
  type: "object",
  properties: Object.fromEntries(COLUMNS.map((c) => [c, { type: "string" }])),
  required: ["id"],
};

const sleep = (ms: number) => Bun.sleep(ms);
const csv = (rows: number) => `${COLUMNS.join(",")}\n${Array.from({ length: rows }, (_, i) => csvRow(i)).join("")}`;

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** One service process; `peak` follows its VmHWM while it lives. */
class Instance {
  peakMiB = 0;
  private sampler: ReturnType<typeof setInterval>;
  private constructor(
    readonly proc: ReturnType<typeof Bun.spawn>,
    readonly url: string,
  ) {
    this.sampler = setInterval(() => this.sample(), 100);
  }

  static async start(env: Record<string, string>): Promise<Instance> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const proc = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOST: "127.0.0.1", LOG_LEVEL: process.env.FAULTS_LOG ?? "silent", SFTP_PORT: "0", SMTP_PORT: "0", SFTP_POLL_CRON: "off", ...env, PORT: String(port), PUBLIC_URL: url },
      stdout: "inherit",
      stderr: "inherit",
    });
    const i = new Instance(proc, url);
    for (let t = 0; t < 600; t++) {
      if ((await fetch(`${url}/livez`).catch(() => null))?.ok) return i;
      if (proc.exitCode !== null) throw new Error(`service exited with ${proc.exitCode}`);
      await sleep(50);
    }
    throw new Error("service did not start");
  }

  private sample(): void {
    try {
      const kb = Number(readFileSync(`/proc/${this.proc.pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/)?.[1] ?? 0);
      this.peakMiB = Math.max(this.peakMiB, Math.round(kb / 1024));
    } catch {}
  }

  async kill9(): Promise<void> {
    this.sample();
    clearInterval(this.sampler);
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }

  async stop(): Promise<void> {
    this.sample();
    clearInterval(this.sampler);
    this.proc.kill("SIGTERM");
    await this.proc.exited;
  }
}

/** A database (SQLite in a data dir, or a fresh Postgres database) with a workspace and a pipeline. */
interface Setup {
  env: Record<string, string>;
  key: string;
  pipelineId: string;
  drop(): Promise<void>;
}

async function setup(dialect: "sqlite" | "pg", via?: TcpProxy): Promise<Setup> {
  const dataDir = tempDir("fps-faults-");
  const env: Record<string, string> = { DATA_DIR: dataDir, WORKERS: "1", ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") };
  let dbName: string | null = null;
  if (dialect === "pg") {
    dbName = `fps_faults_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
    const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${dbName}`);
    await admin.end();
    const u = new URL(PG_ADMIN);
    u.pathname = `/${dbName}`;
    env.DATABASE_URL = via ? via.via(u.toString()) : u.toString();
  }
  // The first start migrates; the CLI then creates the workspace.
  const first = await Instance.start(env);
  // Not spawnSync: the proxy lives in this process's event loop.
  const proc = Bun.spawn([process.execPath, "src/cli.ts", "workspace:create", "--name", "Faults", "--email", "ops@faults-corp.com"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "silent", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const cli = { stdout: await new Response(proc.stdout).text(), stderr: await new Response(proc.stderr).text(), exitCode: await proc.exited };
  if (cli.exitCode !== 0) throw new Error(`workspace:create: ${cli.stderr.toString().split("\n").filter((l) => l.includes("rror")).join(" ").slice(0, 300)}`);
  const key = JSON.parse(cli.stdout.toString()).apiKey as string;
  const api = client(first.url, key);
  const conn = await api.json("POST", "/connections", { name: "Faults feed", type: "SFTP", useHostedSFTP: true });
  const schema = await api.json("POST", "/schemas", { name: "Rows", definition: SCHEMA });
  const pipeline = await api.json("POST", "/pipelines", {
    name: "Faults",
    clientId: conn.id,
    schemaId: schema.id,
    mappings: { fieldMappings: COLUMNS.map((c) => ({ source: c, target: c })), options: { format: "csv" } },
  });
  await first.stop();
  return {
    env,
    key,
    pipelineId: pipeline.id,
    async drop() {
      if (!dbName) return;
      const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
      await admin.end();
    },
  };
}

function client(url: string, key: string) {
  const headers = { "x-api-key": key, "service-version": VERSION };
  return {
    async json(method: string, path: string, body?: unknown) {
      const res = await fetch(`${url}${path}`, { method, headers: { ...headers, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<any>;
    },
    /** Upload: the status (0 when the connection failed) and the run id on 200. */
    async upload(pipelineId: string, name: string, content: string): Promise<{ status: number; id?: string }> {
      const form = new FormData();
      form.append("file", new Blob([content], { type: "text/csv" }), name);
      try {
        const res = await fetch(`${url}/pipelines/${pipelineId}/runs`, { method: "POST", headers, body: form, signal: AbortSignal.timeout(60_000) });
        const body = (await res.json().catch(() => null)) as { id?: string } | null;
        return { status: res.status, id: res.status === 200 ? body?.id : undefined };
      } catch {
        return { status: 0 };
      }
    },
  };
}

/** Counts over a scenario. */
class Tally {
  tried = 0;
  accepted = new Map<string, string>(); // run id -> file name
  unavailable = 0;
  other5xx = 0;
  note(r: { status: number; id?: string }, name: string) {
    this.tried++;
    if (r.status === 200 && r.id) this.accepted.set(r.id, name);
    else if (r.status === 503) this.unavailable++;
    else if (r.status >= 500) this.other5xx++;
  }
}

/** Waits until every accepted run completed and /readyz is 200; answers lost and duplicated, and when that was. */
async function settle(url: string, key: string, pipelineId: string, t: Tally, timeoutMs = 180_000) {
  const api = client(url, key);
  const end = Date.now() + timeoutMs;
  let runs: any[] = [];
  for (;;) {
    runs = [];
    for (let page = 1; ; page++) {
      const r = await api.json("GET", `/pipeline-runs?pipelineId=${pipelineId}&limit=100&page=${page}`).catch(() => null);
      const data = Array.isArray(r) ? r : (r?.data ?? []);
      runs.push(...data);
      if (data.length < 100) break;
    }
    const done = [...t.accepted.keys()].every((id) => runs.find((x) => x.id === id)?.status === "completed");
    const ready = (await fetch(`${url}/readyz`).catch(() => null))?.status === 200;
    if ((done && ready) || Date.now() > end) break;
    await sleep(100);
  }
  const at = performance.now();
  const lost = [...t.accepted.keys()].filter((id) => runs.find((x) => x.id === id)?.status !== "completed").length;
  const perName = new Map<string, number>();
  for (const r of runs) perName.set(r.filename, (perName.get(r.filename) ?? 0) + 1);
  const duplicated = [...perName.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
  return { lost, duplicated, at };
}

type Row = (string | number)[];
const rows: Row[] = [];
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function killDuringUpload(dialect: "sqlite" | "pg") {
  const s = await setup(dialect);
  const t = new Tally();
  let recover = 0;
  let peak = 0;
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const a = await Instance.start(s.env);
    const api = client(a.url, s.key);
    const body = csv(20_000);
    const uploads = Array.from({ length: 10 }, () => {
      const name = `up-${round}-${n++}.csv`;
      return api.upload(s.pipelineId, name, body).then((r) => t.note(r, name));
    });
    await sleep(150);
    await a.kill9();
    await Promise.all(uploads);
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
  rows.push([`kill -9 during upload (${dialect}, ${ROUNDS} rounds)`, t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(recover), `${peak} MiB`]);
  await s.drop();
}

async function killDuringProcessing(dialect: "sqlite" | "pg") {
  const s = await setup(dialect);
  const t = new Tally();
  let recover = 0;
  let peak = 0;
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const a = await Instance.start(s.env);
    const api = client(a.url, s.key);
    const body = csv(50_000);
    for (let i = 0; i < 10; i++) {
      const name = `proc-${round}-${n++}.csv`;
      t.note(await api.upload(s.pipelineId, name, body), name);
    }
    // Killed once a run is being processed.
    for (let i = 0; i < 200; i++) {
      const page = await api.json("GET", `/pipeline-runs?pipelineId=${s.pipelineId}&status=processing&limit=1`).catch(() => null);
      if ((Array.isArray(page) ? page : (page?.data ?? [])).length > 0) break;
      await sleep(20);
    }
    await a.kill9();
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
  rows.push([`kill -9 during processing (${dialect}, ${ROUNDS} rounds)`, t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(recover), `${peak} MiB`]);
  await s.drop();
}

/** Uploads every 100 ms through a proxy fault of `ms`, then restores it. */
async function proxyFault(label: string, fault: (p: TcpProxy) => void, ms: number) {
  const pg = new URL(PG_ADMIN);
  const proxy = await TcpProxy.start({ host: pg.hostname, port: Number(pg.port || 5432) });
  const s = await setup("pg", proxy);
  const a = await Instance.start(s.env);
  const api = client(a.url, s.key);
  const t = new Tally();
  const body = csv(2_000);
  let n = 0;
  let going = true;
  const sender = (async () => {
    const inFlight: Promise<void>[] = [];
    while (going) {
      const name = `px-${n++}.csv`;
      inFlight.push(api.upload(s.pipelineId, name, body).then((r) => t.note(r, name)));
      await sleep(100);
    }
    await Promise.all(inFlight);
  })();
  await sleep(1_000);
  fault(proxy);
  await sleep(ms);
  proxy.restore();
  const t0 = performance.now();
  await sleep(1_000);
  going = false;
  await sender;
  const r = await settle(a.url, s.key, s.pipelineId, t);
  await a.stop();
  await proxy.close();
  rows.push([label, t.tried, r.lost, r.duplicated, t.unavailable, t.other5xx, secs(r.at - t0), `${a.peakMiB} MiB`]);
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

const only = process.env.FAULTS_ONLY?.split(",");
const scenarios: [string, () => Promise<void>][] = [
  ["kill-upload-sqlite", () => killDuringUpload("sqlite")],
  ["kill-upload-pg", () => killDuringUpload("pg")],
  ["kill-processing-sqlite", () => killDuringProcessing("sqlite")],
  ["kill-processing-pg", () => killDuringProcessing("pg")],
  ["blip", () => proxyFault("Postgres refuses for 3 s (blip)", (p) => p.refuse(), 3_000)],
  ["outage", () => proxyFault("Postgres refuses for 30 s (outage)", (p) => p.refuse(), 30_000)],
  ["reset", () => proxyFault("Postgres connections reset (3 times, 1 s apart)", (p) => {
    p.reset();
    setTimeout(() => p.reset(), 1_000);
    setTimeout(() => p.reset(), 2_000);
  }, 3_000)],
  ["stall", () => proxyFault("Postgres stalls for 10 s", (p) => p.stall(), 10_000)],
  ["two", twoInstancesOneKilled],
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
  writeFileSync(
    join(ROOT, "bench", "results", "faults.md"),
    `# Fault harness\n\n\`bun bench/faults.ts ${ROUNDS}\` on ${machine()}.\n\n${out}\n`,
  );
}
