import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import { openInput } from "../../engine/parse";
import { EngineInputError, type SourceRecord } from "../../engine/types";
import type { CallOptions, ServiceContext } from "../context";
import type { Sample } from "../shared/sample";
import { ColumnStats, draftSchema } from "./infer";
import { InferSchemaInput, type InferredSchema } from "./infer-shapes";

export interface InferSchemaOptions extends CallOptions {
  sample: Sample;
  input: unknown;
  signal?: AbortSignal;
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * Drafts a row schema from a sample file, read by the engine's parsers
 * under the same rules as a run (hostile-input limits, detection). Nothing
 * is stored: the answer is a definition to send to POST /schemas and a
 * suggested fieldMappings. A sample the engine cannot read is a 400 with the
 * engine's message.
 */
export async function inferSchema(ctx: ServiceContext, opts: InferSchemaOptions): Promise<InferredSchema> {
  const input = parseInput(InferSchemaInput, opts.input ?? {});
  const o = input.options ?? {};
  const deadline = performance.now() + ctx.settings.preview.timeoutMs;
  const { sample } = opts;
  const stats = new Map<string, ColumnStats>();
  let rows = 0;
  let timedOut = false;
  let held: SourceRecord | null = null;
  const add = (record: SourceRecord) => {
    rows++;
    for (const key of Object.keys(record)) {
      let s = stats.get(key);
      if (!s) {
        s = new ColumnStats(key);
        // A column first seen now was missing from every earlier record.
        s.empties = rows - 1;
        stats.set(key, s);
      }
      s.add(record[key]);
    }
  };
  let summary;
  try {
    const parsed = await openInput(once(sample.bytes), {
      filename: sample.filename,
      format: o.format,
      delimiter: o.delimiter,
      quote: o.quote,
      headerRow: o.headerRow,
      skipEmptyLines: o.skipEmptyLines,
      encoding: o.encoding,
      recordPath: o.recordPath,
      sheet: typeof o.sheet === "string" ? o.sheet : undefined,
    });
    summary = parsed.summary;
    try {
      for await (const batch of parsed.batches) {
        for (const record of batch) {
          // A cut sample's last record may itself be cut: each record waits for the next before it counts.
          if (sample.truncated) {
            if (held) add(held);
            held = record;
          } else add(record);
        }
        if (opts.signal?.aborted) throw new AppError("invalid_input", "file: the request was cancelled");
        if (performance.now() > deadline) {
          timedOut = true;
          break;
        }
      }
    } catch (e) {
      if (!(sample.truncated && e instanceof EngineInputError && rows + (held ? 1 : 0) > 0)) throw e;
    }
  } catch (e) {
    if (e instanceof EngineInputError) throw new AppError("invalid_input", `file: ${e.message}`);
    throw e;
  }
  // The header names every column, even one empty throughout (CSV, TSV, XLSX).
  const order = [...summary.columns, ...[...stats.keys()].filter((k) => !summary.columns.includes(k))];
  const columns = order.map((name) => stats.get(name) ?? new ColumnStats(name));
  if (columns.length === 0) throw new AppError("invalid_input", "file: has no columns to infer a schema from");
  const drafted = draftSchema(columns, rows);
  return {
    ...drafted,
    detected: { format: summary.format, encoding: summary.encoding ?? null, gzip: summary.gzip, delimiter: summary.delimiter ?? null },
    rows,
    truncated: sample.truncated,
    timedOut,
  };
}
