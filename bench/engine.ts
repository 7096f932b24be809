/**
 * Issue 6 benchmark: a generated 1,000,000-row, 10-column CSV processed end
 * to end through the API on the embedded default (upload, parse, map with
 * transforms, validate, write), side by side in the same run with papaparse
 * stream-parsing the same file and doing nothing else. Then a 1 GB CSV for
 * the service's peak RSS.
 *   bun bench/engine.ts [rows=1000000] [bigRows=11500000]
 * Writes bench/results/engine.md.
 */
import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { benchPipeline, fmt, machine, peakRssMiB, startService, table, tempDir, upload, waitForRun, writeCsv } from "./lib";

const rows = Number(process.argv[2] ?? 1_000_000);
const bigRows = Number(process.argv[3] ?? 11_500_000);
const dir = tempDir("fps-bench-engine-");
const file = join(dir, "rows.csv");
const bytes = await writeCsv(file, rows);
console.error(`generated ${fmt(rows)} rows, ${(bytes / 1e6).toFixed(1)} MB`);

function baseline(path: string) {
  const p = Bun.spawnSync([process.execPath, join(import.meta.dir, "papaparse-only.ts"), path]);
  if (p.exitCode !== 0) throw new Error(p.stderr.toString());
  return JSON.parse(p.stdout.toString()) as { rows: number; seconds: number; rowsPerSecond: number; peakRssMiB: number };
}

async function endToEnd(path: string, n: number) {
  const svc = await startService();
  try {
    const pipeline = await benchPipeline(svc);
    const t0 = performance.now();
    const run = await upload(svc, pipeline.id, path);
    const tUploaded = performance.now();
    const done = await waitForRun(svc, run.id);
    const seconds = (performance.now() - t0) / 1000;
    if (done.status !== "completed") throw new Error(`run ended ${done.status}: ${done.errorMessage}`);
    if (done.metadata?.rows?.total !== n) throw new Error(`run read ${done.metadata?.rows?.total} rows, expected ${n}`);
    return { seconds, uploadSeconds: (tUploaded - t0) / 1000, rowsPerSecond: n / seconds, peakRssMiB: peakRssMiB(svc.pid), metadata: done.metadata };
  } finally {
    await svc.stop();
    rmSync(svc.env.DATA_DIR!, { recursive: true, force: true });
  }
}

const base = baseline(file);
const e2e = await endToEnd(file, rows);
console.error({ base, e2e });

let big: Awaited<ReturnType<typeof endToEnd>> | null = null;
let bigBytes = 0;
if (bigRows > 0) {
  const bigFile = join(dir, "big.csv");
  bigBytes = await writeCsv(bigFile, bigRows);
  console.error(`generated ${fmt(bigRows)} rows, ${(bigBytes / 1e9).toFixed(2)} GB`);
  big = await endToEnd(bigFile, bigRows);
  console.error({ big });
  rmSync(bigFile);
}
rmSync(dir, { recursive: true, force: true });

const ratio = e2e.rowsPerSecond / base.rowsPerSecond;
const out = `# Engine benchmark (issue 6)

Machine: ${machine()}. Embedded default (SQLite, local disk), service started as its own process with \`LOG_LEVEL=warn\`,
default worker pool. Measured ${new Date().toISOString().slice(0, 10)} by \`bun bench/engine.ts ${rows} ${bigRows}\`, all rows of a table in one run.

Input: generated CSV, ${fmt(rows)} rows x 10 columns (${(bytes / 1e6).toFixed(1)} MB). End to end = from the start of the
upload (curl -F, streamed) until \`GET /pipeline-runs/{id}\` reports \`completed\`: upload, parse, map with 9 transforms
(integer, uppercase, trim, lowercase, number, boolean, date), validate with ajv, write the processed JSON.

${table(
  ["what", "rows", "seconds", "rows/s", "peak RSS (MiB)", "vs parse-only"],
  [
    ["papaparse parse-only (baseline, own process)", fmt(base.rows), base.seconds.toFixed(2), fmt(base.rowsPerSecond), base.peakRssMiB, "1.00x"],
    ["service end to end (upload + process)", fmt(rows), e2e.seconds.toFixed(2), fmt(e2e.rowsPerSecond), e2e.peakRssMiB, `${ratio.toFixed(2)}x`],
  ],
)}

Upload alone took ${e2e.uploadSeconds.toFixed(2)} s of the end-to-end time; the engine reported processMs = ${e2e.metadata?.timings?.processMs ?? "?"}.
${
  big
    ? `
## 1 GB upload

${table(
  ["input", "seconds", "rows/s", "service peak RSS (MiB)", "target"],
  [[`${fmt(bigRows)} rows, ${(bigBytes / 1e9).toFixed(2)} GB`, big.seconds.toFixed(1), fmt(big.rowsPerSecond), big.peakRssMiB, "< 300 MiB"]],
)}
`
    : ""
}`;
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(join(import.meta.dir, "results", "engine.md"), out);
console.log(out);
