/**
 * The engine's row loop in one thread, stage by stage, for profiling (no
 * service, no files): the bench CSV's rows, held in memory as 256 KiB byte
 * chunks, read by the engine's own CSV reader (`openInput`, field arrays)
 * and driven by its own loop (`pumpRows`, with its collections), five ways,
 * each adding one stage to the one before:
 *   parse      the rows read; mapping, validation and writing stood in for by no-ops
 *   + map      the bench pipeline's mapping (nine transforms)
 *   + validate ajv against the bench schema
 *   + JSON     the processed file's text
 *   + encode   that text encoded into one reused buffer, as the local store's writer does
 * and then the native row loop (src/engine/native/), every stage at once, over
 * the same rows in 2 MiB stripes as a worker runs it. Prints the CPU time (user + system) per row of each, the lowest of
 * `passes` passes, the stages alternating within each pass.
 *   bun bench/row-loop.ts [rows=300000] [passes=10]
 */
import type { RowError, RunCounts } from "../src/domain/runs";
import { type CompiledMapping, compileMapping, schemaProperties } from "../src/engine/map";
import { nativePlan, rowLoop } from "../src/engine/native/rowloop";
import { nativeRows } from "../src/engine/native/stripe";
import { openInput } from "../src/engine/parse";
import { pumpRows } from "../src/engine/process";
import { type RowValidator, validatorFor } from "../src/engine/validate";
import { jsonWriter } from "../src/engine/write";
import { ChunkEncoder } from "../src/engine/write/chunks";
import type { RowWriter } from "../src/engine/write/types";
import { BENCH_FIELD_MAPPINGS, BENCH_SCHEMA, COLUMNS, csvRow, fmt, machine } from "./lib";

const rows = Number(process.argv[2] ?? 300_000);
const passes = Number(process.argv[3] ?? 10);
const CHUNK = 256 * 1024;

let text = `${COLUMNS.join(",")}\n`;
for (let i = 0; i < rows; i++) text += csvRow(i);
const bytes = new TextEncoder().encode(text);
text = "";
const chunks: Uint8Array[] = [];
for (let at = 0; at < bytes.length; at += CHUNK) chunks.push(bytes.slice(at, at + CHUNK));

async function* source(): AsyncGenerator<Uint8Array> {
  yield* chunks;
}

const mapping = compileMapping({ fieldMappings: [...BENCH_FIELD_MAPPINGS], schemaProperties: schemaProperties(BENCH_SCHEMA) });
const validator = validatorFor({ id: "bench", version: "1", definition: BENCH_SCHEMA });
const EMPTY = {};
const noMapping: CompiledMapping = { columns: mapping.columns, map: () => EMPTY, forFields: () => () => EMPTY };
const noValidation: RowValidator = { check: () => true };
const noText = (): RowWriter => ({ format: "json", contentType: "application/json", begin: () => "", rows: () => "", end: () => "" });
const encoder = new TextEncoder();
const buffer = new Uint8Array(8 << 20);

interface Stage {
  name: string;
  mapping: CompiledMapping;
  validator: RowValidator;
  writer: () => RowWriter;
  encode: boolean;
}
const stages: Stage[] = [
  { name: "parse", mapping: noMapping, validator: noValidation, writer: noText, encode: false },
  { name: "+ map", mapping, validator: noValidation, writer: noText, encode: false },
  { name: "+ validate", mapping, validator, writer: noText, encode: false },
  { name: "+ JSON", mapping, validator, writer: jsonWriter, encode: false },
  { name: "+ encode", mapping, validator, writer: jsonWriter, encode: true },
];

async function pass(stage: Stage): Promise<number> {
  const counts: RunCounts = { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 };
  const errors: RowError[] = [];
  const started = process.cpuUsage();
  const input = await openInput(source(), { filename: "rows.csv", format: "csv", fields: true });
  const stop = await pumpRows(input, {
    mapping: stage.mapping,
    validator: stage.validator,
    writer: stage.writer(),
    rejectWriter: jsonWriter(),
    policy: "skip",
    maxInvalidRows: undefined,
    counts,
    errors,
    rows: async (out) => {
      if (stage.encode) encoder.encodeInto(out, buffer);
    },
    rejects: async () => {},
  });
  const used = process.cpuUsage(started);
  if (stop !== null || counts.total !== rows || counts.invalid !== 0) throw new Error(`${stage.name}: ${counts.total} rows, ${counts.invalid} invalid, ${stop}`);
  return (used.user + used.system) / rows;
}

// The native row loop (src/engine/native/) over the same rows in 2 MiB stripes, as a worker runs it: every stage at once, encoded.
const built = rowLoop();
if (!built) throw new Error("the native row loop is not built (npm run build:native)");
const loop = built;
const header = bytes.indexOf(10) + 1;
const plan = nativePlan({ fieldMappings: [...BENCH_FIELD_MAPPINGS], schema: BENCH_SCHEMA, columns: COLUMNS, delimiter: ",", quote: '"', newline: "\n" })!;
const STRIPE = 2 << 20;

function nativePass(): number {
  const counts: RunCounts = { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 };
  const spare: ArrayBuffer[] = [];
  const started = process.cpuUsage();
  for (let at = header; at < bytes.length; ) {
    let end = Math.min(bytes.length, at + STRIPE);
    if (end < bytes.length) end = bytes.indexOf(10, end) + 1;
    const out = new ChunkEncoder(spare);
    const r = nativeRows({ loop, plan, bytes: bytes.subarray(at, end), columns: COLUMNS, quote: '"', mapping, validator, policy: "skip", maxInvalidRows: undefined, counts, errors: [], rejectWriter: jsonWriter(), rejects: () => {}, out, wrote: false });
    if (r.rest !== end - at || r.stop !== null) throw new Error("the native loop stopped short");
    out.finish();
    spare.push(...out.buffers);
    at = end;
  }
  const used = process.cpuUsage(started);
  if (counts.total !== rows || counts.valid !== rows) throw new Error(`native: ${counts.total} rows, ${counts.valid} valid`);
  return (used.user + used.system) / rows;
}

const best = stages.map(() => Number.POSITIVE_INFINITY);
let nativeBest = Number.POSITIVE_INFINITY;
for (let p = 0; p < passes; p++) {
  for (let s = 0; s < stages.length; s++) best[s] = Math.min(best[s]!, await pass(stages[s]!));
  nativeBest = Math.min(nativeBest, nativePass());
}
console.log(`Machine: ${machine()}. ${fmt(rows)} rows (${(bytes.length / 1e6).toFixed(1)} MB), the lowest of ${passes} passes.\n`);
console.log("| stage | CPU µs per row | the stage alone |\n| --- | --- | --- |");
stages.forEach((s, i) => console.log(`| ${s.name} | ${best[i]!.toFixed(3)} | ${i === 0 ? "" : (best[i]! - best[i - 1]!).toFixed(3)} |`));
console.log(`| the native row loop, every stage (src/engine/native/) | ${nativeBest.toFixed(3)} | |`);
