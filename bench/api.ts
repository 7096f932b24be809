/**
 * Issue 10 benchmark: the authenticated read path under load. The service
 * (embedded SQLite, and Postgres when BENCH_DATABASE_URL names a server) and
 * a bare Elysia app with the same route shape (bench/bare-elysia.ts, fixed
 * bodies: the service's own answers) are loaded in the same run with
 * `wrk -t2 -c64 -d10s`, one target after the other, each side warmed first.
 *   bun bench/api.ts [seconds=10] [rounds=2]   (BENCH_DATABASE_URL=postgres://... for the Postgres rows;
 *   BENCH_ONLY=a,b for the targets whose names contain a or b)
 * Writes bench/results/api.md. Run it on a quiet machine: the load average
 * is recorded before each measurement.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { machine, ROOT, type RunningService, startService, table, tempDir, VERSION } from "./lib";

const SECONDS = Number(process.argv[2] ?? 10);
/** Service and bare alternate this many times per target; the best run of each is kept (other work on a shared machine only ever slows a run down). */
const ROUNDS = Number(process.argv[3] ?? 2);
const WARMUP_SECONDS = 2;
/** BENCH_ONLY="GET /pipelines,tRPC": only the targets whose names contain one of these (for trying a change; the committed table has all). */
const ONLY = process.env.BENCH_ONLY?.split(",").filter(Boolean);
const CONNECTIONS = 64;
const THREADS = 2;
const dir = tempDir("fps-bench-api-");

interface Target {
  name: string;
  method: "GET" | "POST";
  path: string;
  /** A fixed POST body. */
  body?: string;
  /** A POST body unique per request: a Lua expression given `n` (thread id and counter). */
  uniqueBody?: (n: string) => string;
  /** Service only: the header set (the bare app needs none). */
  auth: boolean;
  /** The minimum service/bare ratio the issue asks for (SQLite), if any. */
  target?: number;
}

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
}

const loadAvg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const rssMiB = (pid: number) => Math.round(Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0) / 1024);
const peakMiB = (pid: number) => Math.round(Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/)?.[1] ?? 0) / 1024);

function ms(v: string): number {
  const m = v.match(/^([\d.]+)(us|ms|s)$/);
  if (!m) throw new Error(`wrk latency '${v}'`);
  return Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
}

let scripts = 0;

/** A Lua script: headers, method and a body made unique per request (script, thread id and counter). */
function script(t: Target, headers: Record<string, string>): string {
  const run = ++scripts;
  const file = join(dir, `${t.name.replace(/\W+/g, "_")}-${run}.lua`);
  const lines = [
    `wrk.method = "${t.method}"`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers["${k}"] = ${JSON.stringify(v)}`),
    // `id` is each thread's global, set from the main state by setup().
    "counter = 0",
    "threads = 0",
    "function setup(thread) threads = threads + 1; thread:set('id', threads) end",
  ];
  if (t.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(t.body)}`);
  if (t.uniqueBody) {
    lines.push(`function request() counter = counter + 1; local n = "${run}_" .. id .. "_" .. counter; return wrk.format(nil, nil, nil, ${t.uniqueBody("n")}) end`);
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

function wrk(url: string, t: Target, headers: Record<string, string>, seconds: number): WrkResult {
  const p = Bun.spawnSync(["wrk", `-t${THREADS}`, `-c${CONNECTIONS}`, `-d${seconds}s`, "--latency", "-s", script(t, headers), url]);
  const out = p.stdout.toString();
  if (p.exitCode !== 0) throw new Error(`wrk failed: ${p.stderr.toString()}`);
  const rps = Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1]);
  const lat = (pct: string) => ms(out.match(new RegExp(`\\s${pct}%\\s+([\\d.]+\\w+)`))?.[1] ?? "NaN");
  const requests = Number(out.match(/(\d+) requests in/)?.[1] ?? 0);
  const errors = Number(out.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0) + Number(out.match(/Socket errors:.*?timeout (\d+)/)?.[1] ?? 0);
  return { rps, p50: lat("50"), p99: lat("99"), requests, errors };
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

async function waitUp(url: string) {
  for (let i = 0; i < 400; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {}
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not start`);
}

/** A connection list of 30 (so that limit=20 returns a full page), a schema and a pipeline with one webhook. */
async function seed(svc: RunningService) {
  for (let i = 0; i < 30; i++) await svc.api("POST", "/connections", { name: `Partner ${i}`, type: "SFTP", useHostedSFTP: true });
  const [conn] = await svc.api("GET", "/connections?limit=1");
  const schema = await svc.api("POST", "/schemas", {
    name: "Orders",
    definition: { type: "object", properties: { id: { type: "integer" }, sku: { type: "string" }, qty: { type: "integer" } }, required: ["id"] },
  });
  const hook = await svc.api("POST", "/webhooks", { name: "Ops", url: "https://hooks.example.com/ops" });
  const pipeline = await svc.api("POST", "/pipelines", {
    name: "Orders in",
    clientId: conn.id,
    schemaId: schema.id,
    webhookIds: [hook.id],
    mappings: {
      fieldMappings: [
        { source: "ID", target: "id", transform: "integer" },
        { source: "SKU", target: "sku", transform: "uppercase" },
        { source: "Qty", target: "qty", transform: "integer" },
      ],
      options: { format: "csv" },
      validations: { onInvalidRow: "skip" },
    },
  });
  return { connectionId: conn.id as string, schemaId: schema.id as string, pipelineId: pipeline.id as string };
}

const GQL_FIELDS = "id name workspaceId isActive clientId schemaId direction createdAt updatedAt webhooks { id name url } mappings { fieldMappings { source target transform } options validations }";

function targets(ids: { connectionId: string; schemaId: string; pipelineId: string }): Target[] {
  const gql = JSON.stringify({ query: `query($id: ID!) { pipeline(id: $id) { ${GQL_FIELDS} } }`, variables: { id: ids.pipelineId } });
  const create = (n: string) =>
    `'{"name":"Bench ' .. ${n} .. '","clientId":"${ids.connectionId}","schemaId":"${ids.schemaId}","mappings":{"fieldMappings":[{"source":"A","target":"a"}]}}'`;
  return [
    { name: "GET /pipelines/{id}", method: "GET", path: `/pipelines/${ids.pipelineId}`, auth: true, target: 0.45 },
    { name: "GET /connections?limit=20", method: "GET", path: "/connections?limit=20", auth: true, target: 0.15 },
    { name: "POST /pipelines", method: "POST", path: "/pipelines", uniqueBody: create, auth: true },
    { name: "GraphQL pipeline(id)", method: "POST", path: "/graphql", body: gql, auth: true },
    { name: "tRPC pipelines.get", method: "GET", path: `/trpc/pipelines.get?input=${encodeURIComponent(JSON.stringify({ id: ids.pipelineId }))}`, auth: true },
  ];
}

async function answer(url: string, t: Target, headers: Record<string, string>, body?: string) {
  const res = await fetch(`${url}${t.path}`, { method: t.method, headers, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${t.name}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

interface Row {
  target: Target;
  service: WrkResult;
  bare: WrkResult;
  rss: number;
  load: string;
  /** The service's p99 in every round, in order (the best run's alone would flatter it). */
  p99s: number[];
}

async function runDialect(label: string, extraEnv: Record<string, string>): Promise<{ rows: Row[]; peak: number }> {
  // The hosted SFTP and SMTP servers start with the service: ports of their own, so that nothing else on the machine is in the way.
  const svc = await startService({ SFTP_PORT: String(await freePort()), SMTP_PORT: String(await freePort()), ...extraEnv });
  const bodiesFile = join(dir, `bodies-${label}.json`);
  const barePort = await freePort();
  const bareUrl = `http://127.0.0.1:${barePort}`;
  let bare: ReturnType<typeof Bun.spawn> | null = null;
  try {
    const ids = await seed(svc);
    const list = targets(ids);
    const headers = { "x-api-key": svc.env.API_KEY!, "service-version": VERSION, "content-type": "application/json" };
    // The bare app answers with the service's own bodies.
    const bodies = {
      pipeline: await answer(svc.url, list[0]!, headers),
      connections: await answer(svc.url, list[1]!, headers),
      created: await answer(svc.url, list[2]!, headers, JSON.stringify({ name: "Bench probe", clientId: ids.connectionId, schemaId: ids.schemaId })),
      graphql: await answer(svc.url, list[3]!, headers, list[3]!.body),
      trpc: await answer(svc.url, list[4]!, headers),
    };
    if ((bodies.connections as unknown[]).length !== 20) throw new Error("the connection list is not a full page");
    if (bodies.graphql.errors) throw new Error(`GraphQL: ${JSON.stringify(bodies.graphql.errors)}`);
    writeFileSync(bodiesFile, JSON.stringify(bodies));
    bare = Bun.spawn([process.execPath, join(ROOT, "bench", "bare-elysia.ts"), String(barePort), bodiesFile], { stdout: "inherit", stderr: "inherit" });
    await waitUp(bareUrl);

    const rows: Row[] = [];
    const best = (a: WrkResult | null, b: WrkResult) => (a && a.rps >= b.rps ? a : b);
    for (const t of list) {
      if (ONLY && !ONLY.some((o) => t.name.includes(o))) continue;
      const h = t.auth ? headers : {};
      wrk(`${svc.url}${t.path}`, t, h, WARMUP_SECONDS);
      wrk(`${bareUrl}${t.path}`, t, {}, WARMUP_SECONDS);
      const loads: string[] = [];
      let service: WrkResult | null = null;
      let bareResult: WrkResult | null = null;
      let rss = 0;
      const p99s: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        loads.push(loadAvg().split(" ")[0]!);
        const s = wrk(`${svc.url}${t.path}`, t, h, SECONDS);
        p99s.push(s.p99);
        if (!service || s.rps > service.rps) rss = rssMiB(svc.pid);
        service = best(service, s);
        bareResult = best(bareResult, wrk(`${bareUrl}${t.path}`, t, { "content-type": "application/json" }, SECONDS));
        console.error(label, t.name, round, { service: s, bare: bareResult });
      }
      rows.push({ target: t, service: service!, bare: bareResult!, rss, load: loads.join(", "), p99s });
    }
    return { rows, peak: peakMiB(svc.pid) };
  } finally {
    bare?.kill("SIGTERM");
    await bare?.exited;
    await svc.stop();
  }
}

const results: { label: string; rows: Row[]; peak: number }[] = [];
const startLoad = loadAvg();
results.push({ label: "SQLite (embedded default)", ...(await runDialect("sqlite", {})) });

const admin = process.env.BENCH_DATABASE_URL;
if (admin) {
  const name = `fps_bench_${Date.now().toString(36)}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  try {
    results.push({
      label: "Postgres",
      ...(await runDialect("pg", { DATABASE_URL: url.toString(), ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64") })),
    });
  } finally {
    await sql.unsafe(`drop database if exists ${name} with (force)`);
    await sql.end();
  }
}

const f = (n: number) => Math.round(n).toLocaleString("en-US");
const d = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const sqlite = results[0]!.rows;
const sections = results.map(({ label, rows, peak }) => {
  const body = table(
    ["target", "service req/s", "p50 ms", "p99 ms", "service p99 ms, every round", "bare Elysia req/s", "p50 ms", "p99 ms", "service / bare", "issue's target", "service RSS MiB", "non-2xx", "1-min load before each round"],
    rows.map((r, i) => {
      const ratio = r.service.rps / r.bare.rps;
      let goal = "";
      if (label.startsWith("SQLite") && r.target.target) goal = `>= ${r.target.target}x: ${ratio >= r.target.target ? "met" : "not met"}`;
      if (label === "Postgres") {
        const half = r.service.rps / sqlite[i]!.service.rps;
        goal = `>= 0.5x SQLite: ${half.toFixed(2)}x, ${half >= 0.5 ? "met" : "not met"}`;
      }
      if (i === 0) {
        const under = r.p99s.filter((p) => p < 5).length;
        goal += `${goal ? "; " : ""}p99 < 5 ms: ${under === r.p99s.length ? "met in every round" : `not met (${under} of ${r.p99s.length} rounds under 5 ms)`}`;
      }
      return [r.target.name, f(r.service.rps), d(r.service.p50), d(r.service.p99), r.p99s.map(d).join(", "), f(r.bare.rps), d(r.bare.p50), d(r.bare.p99), `${ratio.toFixed(2)}x`, goal, r.rss, r.service.errors, r.load];
    }),
  );
  return `### ${label}\n\n${body}\n\nService peak RSS over the run: ${peak} MiB.`;
});

const md = `# API request path (issue 10)

\`bun bench/api.ts\` (\`BENCH_DATABASE_URL=postgres://...\` adds the Postgres rows). Each target is loaded with
\`wrk -t${THREADS} -c${CONNECTIONS} -d${SECONDS}s\` (after a ${WARMUP_SECONDS} s warm-up of each side), on the service
(\`LOG_LEVEL=warn\`, a valid \`x-api-key\` and \`Service-Version\`) and on a bare Elysia app with the same route
shape answering the service's own bodies (bench/bare-elysia.ts), alternating ${ROUNDS} times; each side's best run is
shown (the machine is shared: other work only ever slows a run down), and the service's p99 of every round beside
it: the p99 target is judged on every round, not on the best. Both are their own processes on the same
machine as wrk; RSS is the service's resident set right after its best run.

Machine: ${machine()}. Load average at start: ${startLoad}.
Run: ${new Date().toISOString()}.

${sections.join("\n\n")}

See docs/decisions/hot-path.md for what the profile showed and what each change bought.
`;
mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
// A partial run is for trying a change: it never replaces the committed table.
if (!ONLY) writeFileSync(join(ROOT, "bench", "results", "api.md"), md);
console.log(md);
