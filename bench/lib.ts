/**
 * Shared pieces of the benchmarks: start the real service as its own process
 * (so its peak RSS is its own), create a workspace through the admin CLI,
 * generate inputs as streams, and describe the machine for the results.
 */
import { createWriteStream, mkdtempSync, readFileSync } from "node:fs";
import { cpus, totalmem, tmpdir } from "node:os";
import { join } from "node:path";
import { sseMessages } from "../test/helpers/events";

export const ROOT = join(import.meta.dir, "..");
export const VERSION = "2026-05-25";

export function machine(): string {
  const os = readFileSync("/etc/os-release", "utf8").match(/PRETTY_NAME="(.+)"/)?.[1] ?? "linux";
  let pg = "";
  try {
    pg = Bun.spawnSync(["psql", "--version"]).stdout.toString().trim();
  } catch {}
  return `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 1024 ** 3)} GiB RAM, ${os}, Bun ${Bun.version}${pg ? `, ${pg}` : ""}`;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Peak resident set (VmHWM) of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(status.match(/VmHWM:\s+(\d+) kB/)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

export interface RunningService {
  url: string;
  pid: number;
  env: Record<string, string>;
  api<T = any>(method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** The hosted SFTP and SMTP servers start with the service: ports of their own, and no SFTP polling (benches that time runs). */
export const QUIET_SERVERS = { SFTP_PORT: "0", SMTP_PORT: "0", SFTP_POLL_CRON: "off" };

export async function startService(extraEnv: Record<string, string> = {}): Promise<RunningService> {
  const dataDir = tempDir("fps-bench-");
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    // Rate limits stay on (counted, their header fields sent) with a budget above what a run's load sends.
    RATE_LIMIT_REQUESTS: "1000000000",
    // For trying a setting: BENCH_SERVICE_ENV="READ_CACHE_TTL_MS=0,BUN_JSC_numberOfGCMarkers=1".
    ...Object.fromEntries((process.env.BENCH_SERVICE_ENV ?? "").split(",").flatMap((kv) => (kv.indexOf("=") > 0 ? [[kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]] : []))),
    ...extraEnv,
  };
  // BENCH_BUN_FLAGS="--cpu-prof-md --cpu-prof-dir=DIR" profiles the service (its main thread) as it runs.
  const proc = Bun.spawn([process.execPath, ...(process.env.BENCH_BUN_FLAGS ? process.env.BENCH_BUN_FLAGS.split(" ") : []), "src/main.ts"], { cwd: ROOT, env, stdout: "inherit", stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    await Bun.sleep(50);
  }
  const cli = Bun.spawnSync([process.execPath, "src/cli.ts", "workspace:create", "--name", "Bench", "--email", "bench@bench-corp.com"], { cwd: ROOT, env });
  if (cli.exitCode !== 0) throw new Error(`workspace:create failed: ${cli.stderr.toString()}`);
  const { apiKey } = JSON.parse(cli.stdout.toString());
  const headers = { "x-api-key": apiKey, "service-version": VERSION };
  return {
    url,
    pid: proc.pid,
    env: { ...env, API_KEY: apiKey },
    async api(method, path, body) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
      return JSON.parse(text);
    },
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** Uploads a file with curl (streams it from disk) and answers the new run. */
export async function upload(svc: RunningService, pipelineId: string, path: string): Promise<{ id: string }> {
  const p = Bun.spawn(
    ["curl", "-sS", "--fail-with-body", "-H", `x-api-key: ${svc.env.API_KEY}`, "-H", `service-version: ${VERSION}`, "-F", `file=@${path}`, `${svc.url}/pipelines/${pipelineId}/runs`],
    { stdout: "pipe", stderr: "pipe" },
  );
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`upload failed: ${out} ${await new Response(p.stderr).text()}`);
  return JSON.parse(out);
}

export async function waitForRun(svc: RunningService, runId: string, timeoutMs = 30 * 60_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const run = await svc.api("GET", `/pipeline-runs/${runId}`);
    if (["completed", "delivered", "failed", "acknowledged"].includes(run.status)) return run;
    if (Date.now() > end) throw new Error(`run ${runId} still ${run.status}`);
    await Bun.sleep(10);
  }
}

const FINAL = ["completed", "delivered", "failed", "acknowledged"];

export interface RunFollower {
  /** The run once it reached a final status, as the service presented it in the update. */
  wait(runId: string, timeoutMs?: number): Promise<any>;
  close(): void;
}

/**
 * Follows a pipeline's runs the way a client sees a run end without asking
 * again and again: the tRPC subscription `runs.onUpdate` (SSE), opened before
 * the upload. Each update carries the run as `GET /pipeline-runs/{id}`
 * answers it. (Polling every 10 ms, as the benches did before, added ~100
 * requests a second to the two cores the service runs on, and up to 10 ms
 * to each run's end.) A slow poll (every 2 s) backs it up in case an update
 * is missed.
 */
export async function followRuns(svc: RunningService, pipelineId: string): Promise<RunFollower> {
  const ac = new AbortController();
  const input = encodeURIComponent(JSON.stringify({ pipelineId }));
  const res = await fetch(`${svc.url}/trpc/runs.onUpdate?input=${input}`, {
    headers: { accept: "text/event-stream", "x-api-key": svc.env.API_KEY!, "service-version": VERSION },
    signal: ac.signal,
  });
  if (res.status !== 200 || !res.body) throw new Error(`runs.onUpdate: ${res.status} ${await res.text()}`);
  const ended = new Map<string, any>();
  const waiting = new Map<string, (run: any) => void>();
  const connected = Promise.withResolvers<void>();
  const settle = (run: any) => {
    if (!run || !FINAL.includes(run.status) || ended.has(run.id)) return;
    ended.set(run.id, run);
    waiting.get(run.id)?.(run);
  };
  void (async () => {
    for await (const m of sseMessages(res.body!)) {
      if (m.event === "connected") connected.resolve();
      if (m.event === "message") settle(JSON.parse(m.data).run);
    }
  })()
    .catch(() => {})
    // A stream that ends before `connected` (rejecting after it resolved does nothing).
    .finally(() => connected.reject(new Error("runs.onUpdate ended before it connected")));
  await connected.promise;
  return {
    async wait(runId, timeoutMs = 30 * 60_000) {
      const end = Date.now() + timeoutMs;
      const done = Promise.withResolvers<any>();
      waiting.set(runId, done.resolve);
      if (ended.has(runId)) return ended.get(runId);
      try {
        for (;;) {
          const run = await Promise.race([done.promise, Bun.sleep(2000).then(() => null)]);
          if (run) return run;
          const polled = await svc.api("GET", `/pipeline-runs/${runId}`);
          if (FINAL.includes(polled.status)) return polled;
          if (Date.now() > end) throw new Error(`run ${runId} still ${polled.status}`);
        }
      } finally {
        waiting.delete(runId);
      }
    },
    close: () => ac.abort(),
  };
}

export const COLUMNS = ["id", "sku", "name", "category", "price", "quantity", "active", "updated", "city", "note"];

/** Row i of the generated 10-column CSV; `variant` changes the text of a row (for deltas). */
export function csvRow(i: number, variant = 0): string {
  const cat = ["tools", "garden", "kitchen", "toys", "books"][i % 5];
  const city = ["Berlin", "Lyon", "Porto", "Turin", "Gent"][i % 5];
  return `${i},SKU-${(i * 7919) % 1000003},  item ${i}  ,${cat},${(i % 1000) + 0.99},${i % 97},${i % 2 ? "yes" : "no"},2026-0${(i % 9) + 1}-1${i % 10},${city},"note ${variant ? `v${variant}` : "a, b"} ${i}"\n`;
}

/** Writes a CSV of `rows` rows (plus header) as a stream; `changed(i)` gives a row's variant. */
export async function writeCsv(path: string, rows: number, changed: (i: number) => number = () => 0): Promise<number> {
  const out = createWriteStream(path, { highWaterMark: 1 << 20 });
  let bytes = 0;
  const write = (s: string) =>
    new Promise<void>((resolve) => {
      bytes += Buffer.byteLength(s);
      if (out.write(s)) resolve();
      else out.once("drain", resolve);
    });
  await write(`${COLUMNS.join(",")}\n`);
  let chunk = "";
  for (let i = 0; i < rows; i++) {
    chunk += csvRow(i, changed(i));
    if (chunk.length > 1 << 20) {
      await write(chunk);
      chunk = "";
    }
  }
  if (chunk) await write(chunk);
  await new Promise<void>((resolve) => out.end(resolve));
  return bytes;
}

/** The generated CSV's schema: a type per column, three of them required. */
export const BENCH_SCHEMA = {
  type: "object",
  properties: {
    id: { type: "integer" },
    sku: { type: "string" },
    name: { type: "string" },
    category: { type: "string" },
    price: { type: "number" },
    quantity: { type: "integer" },
    active: { type: "boolean" },
    updated: { type: "string" },
    city: { type: "string" },
    note: { type: "string" },
  },
  required: ["id", "sku", "price"],
};

/** The bench pipeline's mapping: a transform on nine of the ten columns. */
export const BENCH_FIELD_MAPPINGS = [
  { source: "id", target: "id", transform: "integer" },
  { source: "sku", target: "sku", transform: "uppercase" },
  { source: "name", target: "name", transform: "trim" },
  { source: "category", target: "category", transform: "lowercase" },
  { source: "price", target: "price", transform: "number" },
  { source: "quantity", target: "quantity", transform: "integer" },
  { source: "active", target: "active", transform: "boolean" },
  { source: "updated", target: "updated", transform: "date" },
  { source: "city", target: "city" },
  { source: "note", target: "note", transform: "trim" },
] as const;

/** A schema and pipeline for the generated CSV, with a transform on most columns. */
export async function benchPipeline(svc: RunningService, name = "Bench"): Promise<{ id: string }> {
  const conn = await svc.api("POST", "/connections", { name: `${name} feed`, type: "SFTP", useHostedSFTP: true });
  const schema = await svc.api("POST", "/schemas", {
    name: `${name} rows`,
    definition: BENCH_SCHEMA,
  });
  return svc.api("POST", "/pipelines", {
    name,
    clientId: conn.id,
    schemaId: schema.id,
    mappings: {
      fieldMappings: BENCH_FIELD_MAPPINGS,
      options: { format: "csv" },
      validations: { onInvalidRow: "skip" },
    },
  });
}

export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

export const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
