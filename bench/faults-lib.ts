/**
 * The parts of the fault harness (bench/faults.ts) every scenario uses: the
 * service as a process of its own, a database with a workspace and a
 * pipeline, an API client, and the counts a row of the table is made of.
 */
import { readFileSync } from "node:fs";
import postgres from "postgres";
import type { TcpProxy } from "../test/helpers/tcp-proxy";
import { COLUMNS, csvRow, ROOT, tempDir, VERSION } from "./lib";

export const PG_ADMIN = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
/** A schema of the generated CSV's columns, every one a string. */
export const COLUMNS_SCHEMA = {
  type: "object",
  properties: Object.fromEntries(COLUMNS.map((c) => [c, { type: "string" }])),
  required: ["id"],
};

export const sleep = (ms: number) => Bun.sleep(ms);
export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
export const csv = (rows: number) => `${COLUMNS.join(",")}\n${Array.from({ length: rows }, (_, i) => csvRow(i)).join("")}`;

/** A port free when asked; `Instance.start` tries another one when the service could not bind it. */
function freePort(): number {
  const s = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** One service process; `peakMiB` follows its VmHWM while it lives. */
export class Instance {
  peakMiB = 0;
  /** The hosted SFTP server's port when started with `SFTP_PORT: "free"` (else 0: any port, unknown here). */
  sftpPort = 0;
  private sampler: ReturnType<typeof setInterval>;
  private constructor(
    readonly proc: ReturnType<typeof Bun.spawn>,
    readonly url: string,
  ) {
    this.sampler = setInterval(() => this.sample(), 100);
  }

  /**
   * Starts `bun src/main.ts`. The port is picked free, then bound by the
   * service: another process may take it in between (the machine runs other
   * work), and the service then exits at start; that is retried on a new
   * port. The instance counts as up once it answers /livez and is still alive.
   * `SFTP_PORT: "free"` picks the hosted SFTP server's port the same way.
   */
  static async start(env: Record<string, string>): Promise<Instance> {
    for (let attempt = 1; ; attempt++) {
      const port = freePort();
      const url = `http://127.0.0.1:${port}`;
      const sftpPort = env.SFTP_PORT === "free" ? freePort() : 0;
      const proc = Bun.spawn([process.execPath, "src/main.ts"], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? "",
          HOST: "127.0.0.1",
          LOG_LEVEL: process.env.FAULTS_LOG ?? "silent",
          SMTP_PORT: "0",
          SFTP_POLL_CRON: "off",
          ...env,
          SFTP_PORT: String(sftpPort || (env.SFTP_PORT ?? 0)),
          PORT: String(port),
          PUBLIC_URL: url,
        },
        stdout: "inherit",
        stderr: "inherit",
      });
      const i = new Instance(proc, url);
      i.sftpPort = sftpPort;
      const up = await i.waitUp();
      if (up) return i;
      clearInterval(i.sampler);
      if (attempt >= 5) throw new Error(`service did not start (exit ${proc.exitCode})`);
    }
  }

  private async waitUp(): Promise<boolean> {
    for (let t = 0; t < 600; t++) {
      if (this.proc.exitCode !== null) return false;
      if ((await fetch(`${this.url}/livez`).catch(() => null))?.ok) {
        // A port lost to another process: this one exits at once, while the other answers.
        await sleep(100);
        return this.proc.exitCode === null;
      }
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

  get alive(): boolean {
    return this.proc.exitCode === null;
  }

  async kill9(): Promise<void> {
    await this.signal("SIGKILL");
  }

  async stop(): Promise<void> {
    await this.signal("SIGTERM");
  }

  async signal(sig: "SIGKILL" | "SIGTERM"): Promise<void> {
    this.sample();
    clearInterval(this.sampler);
    this.proc.kill(sig);
    await this.proc.exited;
  }
}

/** A database (SQLite in a data dir, or a fresh Postgres database) with a workspace and a pipeline. */
export interface Setup {
  env: Record<string, string>;
  key: string;
  pipelineId: string;
  connectionId: string;
  drop(): Promise<void>;
}

/**
 * `via`: Postgres through a fault proxy. `env`: more settings for every instance (S3, webhooks, notifications).
 * `connection`: more fields of the hosted connection (an SFTP login, say).
 */
export async function setup(dialect: "sqlite" | "pg", opts: { via?: TcpProxy; env?: Record<string, string>; connection?: Record<string, unknown> } = {}): Promise<Setup> {
  const dataDir = tempDir("fps-faults-");
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    WORKERS: "1",
    ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"),
    ...opts.env,
  };
  let dbName: string | null = null;
  if (dialect === "pg") {
    dbName = `fps_faults_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
    const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${dbName}`);
    await admin.end();
    const u = new URL(PG_ADMIN);
    u.pathname = `/${dbName}`;
    env.DATABASE_URL = opts.via ? opts.via.via(u.toString()) : u.toString();
  }
  // The first start migrates; the CLI then creates the workspace.
  const first = await Instance.start(env);
  // Not spawnSync: a proxy lives in this process's event loop.
  const proc = Bun.spawn([process.execPath, "src/cli.ts", "workspace:create", "--name", "Faults", "--email", "ops@faults-corp.com"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "silent", ...env, SFTP_PORT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const cli = { stdout: await new Response(proc.stdout).text(), stderr: await new Response(proc.stderr).text(), exitCode: await proc.exited };
  if (cli.exitCode !== 0) throw new Error(`workspace:create: ${cli.stderr.split("\n").filter((l) => l.includes("rror")).join(" ").slice(0, 300)}`);
  const key = JSON.parse(cli.stdout).apiKey as string;
  const api = client(first.url, key);
  const conn = await api.json("POST", "/connections", { name: "Faults feed", type: "SFTP", useHostedSFTP: true, ...opts.connection });
  const schema = await api.json("POST", "/schemas", { name: "Rows", definition: COLUMNS_SCHEMA });
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
    connectionId: conn.id,
    async drop() {
      if (!dbName) return;
      const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
      await admin.end();
    },
  };
}

export function client(url: string, key: string) {
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
export class Tally {
  tried = 0;
  accepted = new Map<string, string>(); // run id -> file name
  unavailable = 0;
  other5xx = 0;
  /** Uploads that got no answer at all (the client gave up after 60 s). */
  unanswered = 0;
  /** The longest an upload waited for its answer, ms (steadyUploads). */
  slowestMs = 0;
  note(r: { status: number; id?: string }, name: string) {
    this.tried++;
    if (r.status === 0) this.unanswered++;
    if (r.status === 200 && r.id) this.accepted.set(r.id, name);
    else if (r.status === 503) this.unavailable++;
    else if (r.status >= 500) this.other5xx++;
  }
}

/** The runs of a pipeline, every page. */
export async function listRuns(url: string, key: string, pipelineId: string): Promise<any[]> {
  const api = client(url, key);
  const runs: any[] = [];
  for (let page = 1; ; page++) {
    const r = await api.json("GET", `/pipeline-runs?pipelineId=${pipelineId}&limit=100&page=${page}`).catch(() => null);
    const data = Array.isArray(r) ? r : (r?.data ?? []);
    runs.push(...data);
    if (data.length < 100) return runs;
  }
}

/**
 * Waits until every accepted run completed, `extra` holds (deliveries, say)
 * and /readyz is 200; answers lost and duplicated runs, and when that was.
 */
export async function settle(url: string, key: string, pipelineId: string, t: Tally, opts: { timeoutMs?: number; extra?: () => boolean } = {}) {
  const end = Date.now() + (opts.timeoutMs ?? 180_000);
  let runs: any[] = [];
  for (;;) {
    runs = await listRuns(url, key, pipelineId);
    const done = [...t.accepted.keys()].every((id) => runs.find((x) => x.id === id)?.status === "completed") && (opts.extra?.() ?? true);
    const ready = (await fetch(`${url}/readyz`).catch(() => null))?.status === 200;
    if ((done && ready) || Date.now() > end) break;
    await sleep(100);
  }
  const at = performance.now();
  const lost = [...t.accepted.keys()].filter((id) => runs.find((x) => x.id === id)?.status !== "completed").length;
  return { lost, duplicated: duplicatedRuns(runs), at };
}

/** Runs beyond one per file name. */
export function duplicatedRuns(runs: { filename: string }[]): number {
  const perName = new Map<string, number>();
  for (const r of runs) perName.set(r.filename, (perName.get(r.filename) ?? 0) + 1);
  return [...perName.values()].reduce((n, c) => n + Math.max(0, c - 1), 0);
}

/** Uploads every `everyMs` until `stop()`; `done` settles once every upload answered. */
export function steadyUploads(api: ReturnType<typeof client>, pipelineId: string, t: Tally, prefix: string, body: string, everyMs = 100) {
  let going = true;
  let n = 0;
  const done = (async () => {
    const inFlight: Promise<void>[] = [];
    while (going) {
      const name = `${prefix}-${n++}.csv`;
      const sent = performance.now();
      inFlight.push(
        api.upload(pipelineId, name, body).then((r) => {
          t.slowestMs = Math.max(t.slowestMs, performance.now() - sent);
          t.note(r, name);
        }),
      );
      await sleep(everyMs);
    }
    await Promise.all(inFlight);
  })();
  return {
    done,
    stop() {
      going = false;
      return done;
    },
  };
}

/**
 * Uploads every 100 ms; after 1 s `fault()` for `ms`, then `restore()`;
 * uploads go on 1 s more, then every accepted run must complete. Answers
 * the counts, the settle result and when the fault ended.
 */
export async function faultUnderUploads(a: Instance, s: Setup, fault: () => void, restore: () => void, ms: number) {
  const t = new Tally();
  const uploads = steadyUploads(client(a.url, s.key), s.pipelineId, t, "fault", csv(2_000));
  await sleep(1_000);
  fault();
  await sleep(ms);
  restore();
  const t0 = performance.now();
  await sleep(1_000);
  await uploads.stop();
  const r = await settle(a.url, s.key, s.pipelineId, t);
  return { t, r, recoverMs: r.at - t0 };
}

export type Row = (string | number)[];
