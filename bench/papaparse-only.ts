/**
 * The baseline: papaparse stream-parsing a file and doing nothing else
 * (512 KiB reads, the fastest streaming mode measured on this machine kind;
 * header: false, the cheapest papaparse mode). Prints one JSON line.
 * Usage: bun bench/papaparse-only.ts FILE
 */
import { createReadStream } from "node:fs";
import Papa from "papaparse";
import { peakRssMiB } from "./lib";

const file = process.argv[2];
if (!file) throw new Error("usage: bun bench/papaparse-only.ts FILE");
const t0 = performance.now();
let rows = 0;
await new Promise<void>((resolve, reject) => {
  Papa.parse(createReadStream(file, { highWaterMark: 512 * 1024, encoding: "utf8" }) as never, {
    header: false,
    chunk: (r: Papa.ParseResult<unknown>) => {
      rows += r.data.length;
    },
    complete: () => resolve(),
    error: (e: Error) => reject(e),
  });
});
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ rows: rows - 1, seconds, rowsPerSecond: (rows - 1) / seconds, peakRssMiB: peakRssMiB(process.pid) }));
