/**
 * The in-process cost of one `GET /pipelines/{id}`: the service built in this
 * process (embedded SQLite, LOG_LEVEL=warn, rate limits on), served by
 * Bun.serve, and called through the server's own `fetch` (no socket, no
 * client), so the figure is the service's work alone. For comparing changes
 * to the request path on a shared machine, where wrk's figures move with the
 * load; bench/api.ts is the run of record.
 *   bun bench/request-cost.ts [rounds=12] [requests a round=10000]
 * Prints the minimum and median µs a request over the rounds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createService } from "../src/app";
import { parseConfig } from "../src/config";
import { ROOT, VERSION } from "./lib";

const ROUNDS = Number(process.argv[2] ?? 12);
const N = Number(process.argv[3] ?? 10_000);
const dataDir = mkdtempSync(join(tmpdir(), "fps-request-cost-"));
const env = { DATA_DIR: dataDir, LOG_LEVEL: "warn", PORT: "0", RATE_LIMIT_REQUESTS: "1000000000", PUBLIC_URL: "http://127.0.0.1" };
const cli = Bun.spawnSync([process.execPath, "src/cli.ts", "workspace:create", "--init", "--name", "Bench", "--email", "bench@bench-corp.com"], {
  cwd: ROOT,
  env: { ...process.env, ...env },
});
if (cli.exitCode !== 0) throw new Error(`workspace:create failed: ${cli.stderr.toString()}`);
const { apiKey } = JSON.parse(cli.stdout.toString());

const service = await createService({ config: parseConfig({ ...process.env, ...env }) });
const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (r) => service.http.handle(r) });
const base = `http://127.0.0.1:${server.port}`;
const headers = { "x-api-key": apiKey, "service-version": VERSION };
async function api(method: string, path: string, body?: unknown) {
  const res = await server.fetch(
    new Request(`${base}${path}`, { method, headers: body === undefined ? headers : { ...headers, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
const conn = await api("POST", "/connections", { name: "Partner", type: "SFTP", useHostedSFTP: true });
const schema = await api("POST", "/schemas", { name: "Orders", definition: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] } });
const pipeline = await api("POST", "/pipelines", {
  name: "Orders in",
  clientId: conn.id,
  schemaId: schema.id,
  mappings: { fieldMappings: [{ source: "ID", target: "id", transform: "integer" }], options: { format: "csv" }, validations: { onInvalidRow: "skip" } },
});
const url = `${base}/pipelines/${pipeline.id}`;
const init = { headers };

async function round(): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const res = await server.fetch(new Request(url, init));
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    await res.arrayBuffer();
  }
  return ((performance.now() - t0) * 1000) / N;
}
await round();
const us: number[] = [];
for (let r = 0; r < ROUNDS; r++) us.push(await round());
us.sort((a, b) => a - b);
console.log(`GET /pipelines/{id} in process: min ${us[0]!.toFixed(2)} µs, median ${us[Math.floor(us.length / 2)]!.toFixed(2)} µs a request (${ROUNDS} rounds of ${N})`);
server.stop(true);
await service.close();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
