import type { RowError, RunCounts } from "../../domain/runs";
import type { CompiledMapping } from "../map";
import { isBlank } from "../parse/csv";
import { RecordBuilder, RowNotes } from "../parse/records";
import { invalidRow, mapRow } from "../process";
import type { RowValidator } from "../validate";
import type { ChunkEncoder } from "../write/chunks";
import type { RowWriter } from "../write/types";
import { IO_END, IO_FIELDS, IO_NF, IO_OUT, IO_OUTCAP, IO_POS, IO_ROWEND, IO_ROWS, IO_WROTE, MAX_FIELDS, type NativePlan, type RowLoop, ST_BAIL, ST_END, ST_FULL } from "./rowloop";

/**
 * A CSV/TSV stripe's rows through the native row loop (rowloop.c), with the
 * rows it hands back mapped, validated and written here exactly as
 * `pumpRows` does (docs/decisions/native-row-loop.md).
 */
export interface NativeStripe {
  loop: RowLoop;
  plan: NativePlan;
  /** The stripe's bytes (whole rows, no header). */
  bytes: Uint8Array;
  columns: readonly string[];
  quote: string;
  mapping: CompiledMapping;
  validator: RowValidator;
  policy: "fail" | "skip" | "quarantine";
  maxInvalidRows: number | undefined;
  counts: RunCounts;
  errors: RowError[];
  rejectWriter: RowWriter;
  rejects(text: string): void;
  out: ChunkEncoder;
  /** Whether rows were written before (the next is preceded by ",\n"); updated. */
  wrote: boolean;
}

export interface NativeStripeEnd {
  /** Offset in `bytes` where the JavaScript reader must go on (`bytes.length`: the stripe is done). */
  rest: number;
  /** Why the stripe stopped (a policy or a budget), or null. */
  stop: string | null;
}

/** Rows handed back, at least, before the share of them is judged: more than one in FALLBACK_SHARE and the JavaScript reader takes the rest. */
const FALLBACK_FLOOR = 64;
const FALLBACK_SHARE = 8;

/** Rows this thread's stripes had written natively, handed back to JavaScript, and stripes left to the JavaScript reader part way (the tests read these). */
export const nativeStats = { rows: 0, handedBack: 0, leftPartWay: 0 };

// Field text as the stream decoder gives it: invalid bytes replaced, a byte-order mark inside the file kept.
const DECODER = new TextDecoder("utf-8", { ignoreBOM: true });
const io = new Int32Array(IO_FIELDS + 3 * MAX_FIELDS);

export function nativeRows(s: NativeStripe): NativeStripeEnd {
  const { loop, plan, bytes, out, counts } = s;
  const map = s.mapping.forFields(s.columns);
  // The record a rejects line shows, as the JavaScript reader builds it; made only when a row is rejected (it compiles code per header).
  let builder: RecordBuilder | null = null;
  const record = (fields: string[]) => {
    if (!builder) {
      builder = new RecordBuilder(new RowNotes());
      builder.setColumns([...s.columns]);
    }
    return builder.build(fields, 0, false);
  };
  const doubled = s.quote + s.quote;
  const rowErrors: RowError[] = [];
  let native = 0;
  let handedBack = 0;
  io[IO_POS] = 0;
  io[IO_END] = bytes.byteLength;
  io[IO_WROTE] = s.wrote ? 1 : 0;
  const end = (rest: number, stop: string | null): NativeStripeEnd => {
    s.wrote = io[IO_WROTE] === 1;
    nativeStats.rows += native;
    nativeStats.handedBack += handedBack;
    if (rest < bytes.byteLength && stop === null) nativeStats.leftPartWay++;
    return { rest, stop };
  };
  for (;;) {
    const buf = out.current();
    const used = out.used;
    io[IO_OUT] = used;
    io[IO_OUTCAP] = buf.byteLength;
    const status = loop.rows(bytes, buf, io, plan);
    out.advance(io[IO_OUT]! - used);
    const rows = io[IO_ROWS]!;
    counts.total += rows;
    counts.valid += rows;
    native += rows;
    if (status === ST_END) return end(bytes.byteLength, null);
    if (status === ST_BAIL) return end(io[IO_POS]!, null);
    if (status === ST_FULL) {
      out.seal();
      continue;
    }
    // A row for JavaScript: mostly such rows, and the JavaScript reader is faster at them.
    if (++handedBack > FALLBACK_FLOOR && handedBack * FALLBACK_SHARE > native) return end(io[IO_POS]!, null);
    const fields: string[] = new Array(io[IO_NF]!);
    for (let k = 0; k < fields.length; k++) {
      const at = IO_FIELDS + 3 * k;
      const text = DECODER.decode(bytes.subarray(io[at]!, io[at + 1]!));
      fields[k] = io[at + 2] ? text.replaceAll(doubled, s.quote) : text;
    }
    io[IO_POS] = io[IO_ROWEND]!;
    // papaparse's reader skips blank rows (skipEmptyLines, which striped files have on).
    if (fields[0]!.trim() === "" && isBlank(fields)) continue;
    const rowIndex = counts.total++;
    const row = mapRow(map, s.validator, fields, rowIndex, rowErrors);
    if (row !== null) {
      counts.valid++;
      out.text(io[IO_WROTE] ? `,\n${JSON.stringify(row)}` : JSON.stringify(row));
      io[IO_WROTE] = 1;
      continue;
    }
    const stop = invalidRow(s, rowIndex, rowErrors, s.policy !== "fail" ? record(fields) : null, s.rejects);
    if (stop !== null) return end(io[IO_POS]!, stop);
    // Under `fail` the run fails anyway: one worker reads the file again for its message (src/engine/stripes).
    if (s.policy === "fail") return end(io[IO_POS]!, `row ${rowIndex + 1} is invalid and mappings.validations.onInvalidRow is 'fail'`);
  }
}
