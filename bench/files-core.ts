/**
 * Search and delta over generated processed files, in process: the files
 * are written straight to the object store in the engine's layout (no
 * upload or processing), so this times only the files and delta services.
 * bench/search-delta.ts measures the same through the running service.
 *   bun bench/files-core.ts [searchRows=100000] [deltaRows=1000000]
 */
import { Harness } from "../test/helpers/harness";
import { fixturePipeline, fixtureRun } from "../test/helpers/fixture-runs";
import { searchFiles } from "../src/services/files";
import { getRunDelta } from "../src/services/delta";

const searchRows = Number(process.argv[2] ?? 100_000);
const deltaRows = Number(process.argv[3] ?? 1_000_000);
const CITIES = ["Porto", "Lyon", "Berlin", "Madrid", "Oslo"];

/** The engine's layout, `rows` rows of ten columns; `variant(i)` != 0 changes row i. */
async function* rowsOf(rows: number, variant: (i: number) => number = () => 0): AsyncIterable<Uint8Array> {
  const enc = new TextEncoder();
  let batch = "[\n";
  for (let i = 0; i < rows; i++) {
    const v = variant(i);
    const row = {
      sku: `SKU-${i}`,
      name: `Item ${i}${v ? ` v${v}` : ""}`,
      city: CITIES[i % 5],
      qty: (i * 7) % 1000,
      price: ((i * 13) % 10000) / 100,
      active: i % 3 === 0,
      country: "PT",
      zip: String(10000 + (i % 90000)),
      note: i % 50 === 0 ? "needs review" : "ok",
      date: "2026-11-22",
    };
    batch += (i > 0 ? ",\n" : "") + JSON.stringify(row);
    if (batch.length > 1 << 20) {
      yield enc.encode(batch);
      batch = "";
    }
  }
  batch += rows > 0 ? "\n]\n" : "]\n";
  yield enc.encode(batch);
}

const mib = (n: number) => Math.round(n / 1024 / 1024);
async function timed<T>(fn: () => Promise<T>) {
  Bun.gc(true);
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const t0 = performance.now();
  const value = await fn();
  const ms = performance.now() - t0;
  clearInterval(sampler);
  return { value, ms: Math.round(ms), rssBefore: mib(before), rssPeak: mib(Math.max(peak, process.memoryUsage().rss)) };
}

const h = await Harness.start({ startJobs: false });
try {
  const ws = await h.workspace();
  const p = await fixturePipeline(h, ws);
  const ids: string[] = [];
  for (let r = 0; r < 10; r++) {
    ids.push((await fixtureRun(h, ws, p, { rows: [], processedBody: { chunks: rowsOf(searchRows, (i) => (i % 10 === r ? r + 1 : 0)), rows: searchRows } })).id);
  }
  const queries: [string, Record<string, unknown>][] = [
    ["rare term (one row per run)", { searchTerm: "SKU-7919" }],
    ["common term (20 % of rows)", { searchTerm: "porto" }],
    ["common term, case-sensitive", { searchTerm: "Porto", caseSensitive: true }],
    ["fieldName + exactMatch", { searchTerm: "Lyon", fieldName: "city", exactMatch: true }],
    ["term in every line's field names", { searchTerm: "sku" }],
    ["term with a quote (no pre-check)", { searchTerm: 'x"y' }],
    ["no term (all rows), limit 1000", { limit: 1000 }],
    ["no term, offset 900,000", { offset: 900_000, limit: 100 }],
  ];
  console.log(`search: 10 runs x ${searchRows} rows`);
  for (const [label, q] of queries) {
    await searchFiles(h.svc, { actor: ws.actor, input: { pipelineRunIds: ids, ...q } });
    const t = await timed(() => searchFiles(h.svc, { actor: ws.actor, input: { pipelineRunIds: ids, ...q } }));
    console.log(`  ${label.padEnd(36)} total ${String(t.value.pagination.total).padStart(8)}  ${String(t.ms).padStart(5)} ms  rss ${t.rssBefore} -> ${t.rssPeak} MiB`);
  }

  const base = await fixtureRun(h, ws, p, { rows: [], processedBody: { chunks: rowsOf(deltaRows), rows: deltaRows } });
  const compare = await fixtureRun(h, ws, p, { rows: [], processedBody: { chunks: rowsOf(deltaRows, (i) => (i % 100 === 0 ? 1 : 0)), rows: deltaRows } });
  const q = { baseRunId: base.id, compareRunId: compare.id, limit: "100" };
  const first = await timed(() => getRunDelta(h.svc, { actor: ws.actor, query: q }));
  console.log(`delta: 2 x ${deltaRows} rows, 1 % changed`);
  console.log(`  first page (diff computed)  ${first.ms} ms  rss ${first.rssBefore} -> ${first.rssPeak} MiB  summary ${JSON.stringify(first.value.summary)}`);
  const last = await timed(() => getRunDelta(h.svc, { actor: ws.actor, query: { ...q, page: String(first.value.pagination.totalPages) } }));
  console.log(`  last page (cached diff)     ${last.ms} ms  changes ${last.value.changes.length}`);
} finally {
  await h.close();
}
