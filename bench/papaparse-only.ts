/**
 * The baseline: papaparse stream-parsing a file and doing nothing else
 * (512 KiB reads, the fastest streaming mode measured on this machine kind;
 * header: false, the cheapest papaparse mode), `passes` times in one process.
 * The first pass is what a fresh process gets (papaparse's code still being
 * compiled, every page of its heap new); the later ones are its steady
 * state, as the service's warm runs are. Prints one JSON line: `seconds` of
 * each pass, `firstSeconds`, and `warmSeconds` (the median of the later
 * passes, or null with one pass).
 * Usage: bun bench/papaparse-only.ts FILE [passes=1]
 */
import { createReadStream } from "node:fs";
import Papa from "papaparse";
import { peakRssMiB } from "./lib";

const file = process.argv[2];
if (!file) throw new Error("usage: bun bench/papaparse-only.ts FILE [passes]");
const passes = Math.max(1, Number(process.argv[3] ?? 1));

async function parseOnce(path: string): Promise<{ rows: number; seconds: number }> {
  const t0 = performance.now();
  let rows = 0;
  await new Promise<void>((resolve, reject) => {
    Papa.parse(createReadStream(path, { highWaterMark: 512 * 1024, encoding: "utf8" }) as never, {
      header: false,
      chunk: (r: Papa.ParseResult<unknown>) => {
        rows += r.data.length;
      },
      complete: () => resolve(),
      error: (e: Error) => reject(e),
    });
  });
  return { rows: rows - 1, seconds: (performance.now() - t0) / 1000 };
}

const seconds: number[] = [];
let rows = 0;
for (let i = 0; i < passes; i++) {
  const r = await parseOnce(file);
  rows = r.rows;
  seconds.push(r.seconds);
}
const later = seconds.slice(1).sort((a, b) => a - b);
const warmSeconds = later.length > 0 ? later[Math.floor(later.length / 2)]! : null;
console.log(JSON.stringify({ rows, seconds, firstSeconds: seconds[0], warmSeconds, peakRssMiB: peakRssMiB(process.pid) }));
