/**
 * Issue 6 benchmark: row search over 10 runs of 100,000 rows each (target
 * under 1 s), and the delta of two 1,000,000-row runs that differ in 1 % of
 * rows (target under 10 s, bounded memory). Embedded default, service as its
 * own process. Writes bench/results/search-delta.md.
 *   bun bench/search-delta.ts [searchRows=100000] [deltaRows=1000000]
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { benchPipeline, fmt, machine, peakRssMiB, startService, table, tempDir, upload, waitForRun, writeCsv } from "./lib";

const searchRows = Number(process.argv[2] ?? 100_000);
const deltaRows = Number(process.argv[3] ?? 1_000_000);
const dir = tempDir("fps-bench-search-");
const svc = await startService();
const rssMiB = () => Math.round(Number(readFileSync(`/proc/${svc.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0) / 1024);

/** Times a call while sampling the service's RSS: seconds, and the highest RSS seen. */
async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; rssBefore: number; rssMax: number }> {
  const rssBefore = rssMiB();
  let rssMax = rssBefore;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB())), 10);
  const t0 = performance.now();
  try {
    const value = await fn();
    return { value, ms: performance.now() - t0, rssBefore, rssMax: Math.max(rssMax, rssMiB()) };
  } finally {
    clearInterval(sampler);
  }
}

try {
  const pipeline = await benchPipeline(svc);
  // Ten runs of searchRows rows (each file differs, so hits differ per run).
  const runIds: string[] = [];
  for (let r = 0; r < 10; r++) {
    const f = join(dir, `s${r}.csv`);
    await writeCsv(f, searchRows, (i) => (i % 10 === r ? r + 1 : 0));
    const run = await upload(svc, pipeline.id, f);
    runIds.push(run.id);
  }
  for (const id of runIds) {
    const done = await waitForRun(svc, id);
    if (done.status !== "completed") throw new Error(`search run ${id} ended ${done.status}: ${done.errorMessage}`);
  }
  const queries: [string, Record<string, unknown>][] = [
    ["rare term (one row per run)", { searchTerm: "SKU-7919" }],
    ["common term (20 % of rows)", { searchTerm: "porto" }],
    ["common term, case-sensitive", { searchTerm: "Porto", caseSensitive: true }],
    ["fieldName + exactMatch", { searchTerm: "Lyon", fieldName: "city", exactMatch: true }],
    ["no term (all rows), limit 1000", { limit: 1000 }],
    ["no match", { searchTerm: "zzz-no-such-text" }],
  ];
  const searchRowsOut: (string | number)[][] = [];
  for (const [label, q] of queries) {
    await svc.api("POST", "/files/search", { pipelineRunIds: runIds, ...q }); // warm
    const best = [];
    for (let i = 0; i < 3; i++) best.push(await timed(() => svc.api("POST", "/files/search", { pipelineRunIds: runIds, ...q })));
    best.sort((a, b) => a.ms - b.ms);
    const t = best[1]!;
    searchRowsOut.push([label, fmt(t.value.pagination.total), t.value.metadata.filesSearched, t.value.metadata.searchDurationMs, Math.round(t.ms)]);
  }

  // Delta: two runs of deltaRows rows; 1 % of rows changed.
  const baseFile = join(dir, "base.csv");
  const cmpFile = join(dir, "compare.csv");
  await writeCsv(baseFile, deltaRows);
  await writeCsv(cmpFile, deltaRows, (i) => (i % 100 === 0 ? 1 : 0));
  const baseRun = await upload(svc, pipeline.id, baseFile);
  const cmpRun = await upload(svc, pipeline.id, cmpFile);
  for (const id of [baseRun.id, cmpRun.id]) {
    const done = await waitForRun(svc, id);
    if (done.status !== "completed") throw new Error(`delta run ${id} ended ${done.status}: ${done.errorMessage}`);
  }
  const delta = await timed(() => svc.api("GET", `/pipeline-runs/delta?baseRunId=${baseRun.id}&compareRunId=${cmpRun.id}&limit=100`));
  const s = delta.value.summary;

  const out = `# Search and delta benchmark (issue 6)

Machine: ${machine()}. Embedded default (SQLite, local disk), service as its own process (\`LOG_LEVEL=warn\`).
Measured ${new Date().toISOString().slice(0, 10)} by \`bun bench/search-delta.ts ${searchRows} ${deltaRows}\`, one run.

## Search: 10 runs x ${fmt(searchRows)} rows (target: under 1 s)

Median of three after one warm-up; \`searchDurationMs\` is the service's own figure, "client ms" includes HTTP.

${table(["query", "total hits", "files searched", "searchDurationMs", "client ms"], searchRowsOut)}

## Delta: two runs of ${fmt(deltaRows)} rows differing in 1 % of rows (target: under 10 s, bounded memory)

${table(
  ["base rows", "compare rows", "added", "removed", "unchanged", "seconds", "service RSS before (MiB)", "highest RSS during (MiB)"],
  [[fmt(s.baseCount), fmt(s.compareCount), fmt(s.added), fmt(s.removed), fmt(s.unchanged), (delta.ms / 1000).toFixed(2), delta.rssBefore, delta.rssMax]],
)}

Service peak RSS over the whole benchmark (all uploads and processing included): ${peakRssMiB(svc.pid)} MiB.
`;
  writeFileSync(join(import.meta.dir, "results", "search-delta.md"), out);
  console.log(out);
} finally {
  await svc.stop();
  rmSync(dir, { recursive: true, force: true });
}
