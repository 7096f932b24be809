/**
 * Parses a generated ~200 MB CSV stream through openInput in a process of its
 * own, so the RSS it reports is not shared with other test files, and prints
 * `{rows, last, growthBytes}` as JSON.
 */
import { openInput } from "../../src/engine/parse";
import type { SourceRecord } from "../../src/engine/types";

const rowsWanted = Number(process.argv[2] ?? 2_000_000);
const row = (i: number) => `${i},Name ${i},user${i}@example.com,${i % 90},"City, ${i % 100}",NL,${i}.50,2024-01-01,true,a note\n`;
async function* source(): AsyncGenerator<Uint8Array> {
  const enc = new TextEncoder();
  yield enc.encode("id,name,email,age,city,country,amount,date,active,note\n");
  for (let i = 0; i < rowsWanted; i += 5000) {
    let s = "";
    for (let j = i; j < i + 5000; j++) s += row(j);
    yield enc.encode(s);
  }
}
Bun.gc(true);
const before = process.memoryUsage().rss;
let peak = before;
let rows = 0;
let last: SourceRecord | undefined;
const input = await openInput(source(), { filename: "big.csv" });
for await (const batch of input.batches) {
  rows += batch.length;
  last = batch[batch.length - 1];
  if (rows % 200_000 < batch.length) peak = Math.max(peak, process.memoryUsage().rss);
}
console.log(JSON.stringify({ rows, last, growthBytes: peak - before }));
