/**
 * Preview and schema inference on the 1M-row bench file: the whole file is
 * sent (curl, streamed from disk); the service reads PREVIEW_MAX_BYTES of it
 * (default 16 MiB), answers the first 100 mapped rows and the counts over
 * that sample (`truncated`). Target: under 1 s. Embedded default, service as
 * its own process, once with the default limit (4 MiB) and once with 16 MiB.
 * Writes bench/results/preview.md.
 *   bun bench/preview.ts [rows=1000000] [repeats=5]
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { benchPipeline, fmt, machine, peakRssMiB, startService, table, tempDir, VERSION, writeCsv } from "./lib";

const rows = Number(process.argv[2] ?? 1_000_000);
const repeats = Number(process.argv[3] ?? 5);
const dir = tempDir("fps-bench-preview-");
const LIMITS = [4 * 1024 ** 2, 16 * 1024 ** 2];
const sections: string[] = [];
let svc = await startService();

async function post(path: string, file: string, fields: Record<string, string> = {}): Promise<{ ms: number; body: any }> {
  const form = Object.entries(fields).flatMap(([k, v]) => ["-F", `${k}=${v}`]);
  const t0 = performance.now();
  const p = Bun.spawn(["curl", "-sS", "--fail-with-body", "-H", `x-api-key: ${svc.env.API_KEY}`, "-H", `service-version: ${VERSION}`, ...form, "-F", `file=@${file}`, `${svc.url}${path}`], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`${path}: ${out} ${await new Response(p.stderr).text()}`);
  return { ms: performance.now() - t0, body: JSON.parse(out) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const big = join(dir, "bench.csv");
const bigBytes = await writeCsv(big, rows);
const small = join(dir, "small.csv");
const smallBytes = await writeCsv(small, 10_000);
try {
  for (const limit of LIMITS) {
    if (limit !== LIMITS[0]) {
      await svc.stop();
      svc = await startService({ PREVIEW_MAX_BYTES: String(limit) });
    }
    const pipeline = await benchPipeline(svc, "Preview bench");
    const cases: [string, string, string, number, Record<string, string>][] = [
      ["preview, first 100 rows", `/pipelines/${pipeline.id}/preview`, big, bigBytes, {}],
      ["preview, first 1,000 rows", `/pipelines/${pipeline.id}/preview`, big, bigBytes, { limit: "1000" }],
      ["preview, 10,000-row file", `/pipelines/${pipeline.id}/preview`, small, smallBytes, {}],
      ["schema inference", "/schemas/infer", big, bigBytes, {}],
      ["schema inference, 10,000-row file", "/schemas/infer", small, smallBytes, {}],
    ];
    const lines: (string | number)[][] = [];
    for (const [name, path, file, bytes, fields] of cases) {
      await post(path, file, fields);
      const runs: { ms: number; body: any }[] = [];
      for (let i = 0; i < repeats; i++) runs.push(await post(path, file, fields));
      const last = runs.at(-1)!.body;
      const read = last.counts?.total ?? last.rows;
      const returned = Array.isArray(last.rows) ? last.rows.length : "-";
      lines.push([name, `${(bytes / 1024 ** 2).toFixed(1)} MiB`, fmt(read), returned, String(last.truncated), fmt(median(runs.map((r) => r.ms))), fmt(Math.max(...runs.map((r) => r.ms)))]);
      console.log(lines.at(-1)!.join("  "));
    }
    sections.push(`## PREVIEW_MAX_BYTES ${limit} (${limit / 1024 ** 2} MiB)${limit === LIMITS[0] ? ", the default" : ""}

${table(["request", "file", "rows read", "rows returned", "truncated", "median ms", "worst ms"], lines)}

Peak RSS of the service: ${peakRssMiB(svc.pid)} MiB.`);
  }
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  const md = `# Preview and schema inference

\`bun bench/preview.ts ${rows} ${repeats}\`, ${machine()}; load average at the end ${load}. The service runs as its own process
with its defaults but PREVIEW_MAX_BYTES; each request sends the whole file with curl, streamed from disk, and is timed
from the start of curl to the whole answer (median and worst of ${repeats}, after one warm-up). "rows read" is the
sample's rows (the file is cut at PREVIEW_MAX_BYTES, \`truncated\`, and the service stops reading the upload there);
the counts cover them.

${sections.join("\n\n")}
`;
  writeFileSync(join(import.meta.dir, "results", "preview.md"), md);
  console.log(md);
} finally {
  await svc.stop();
  rmSync(dir, { recursive: true, force: true });
}
