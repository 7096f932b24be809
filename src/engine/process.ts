import type { ObjectStore } from "../adapters/storage/port";
import type { RowError, RunCounts } from "../domain/runs";
import { rowCollector } from "../runtime/gc";
import { type HeaderStep, type HeaderSummary, hasHeader, headerStep, mappingFor } from "./header";
import { type CompiledMapping, MappingConfigError } from "./map";
import { openInput, type ParsedInput } from "./parse";
import { EngineInputError, type EngineProgress, type ParseOptions, PROGRESS_BYTES, PROGRESS_ROWS, type ParseSummary, type ProcessOutcome, type ProcessRequest } from "./types";
import { trace } from "./trace";
import { type RowValidator, SchemaCompileError, validatorFor } from "./validate";
import { createWriter, jsonWriter, type RowWriter } from "./write";
import { openSink, type Sink } from "./write/sink";

/** Row errors kept in the outcome (and run metadata). */
export const MAX_REPORTED_ERRORS = 20;
/** Errors named in a failed run's message. */
const ERRORS_IN_MESSAGE = 3;

export class Cancelled extends Error {}

/** `chunks` as they are, adding each one's size to the bytes read of `progress`. */
async function* counted(chunks: AsyncIterable<Uint8Array>, progress: EngineProgress): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    progress[PROGRESS_BYTES]! += chunk.byteLength;
    yield chunk;
  }
}

export async function* chunksOf(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Uint8Array> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

export function parseOptions(req: ProcessRequest): ParseOptions {
  const o = req.mappings.options;
  return {
    filename: req.filename,
    format: o.format,
    delimiter: o.delimiter,
    quote: o.quote,
    headerRow: o.headerRow,
    skipEmptyLines: o.skipEmptyLines,
    encoding: o.encoding,
    recordPath: o.recordPath,
    fixedWidth: o.fixedWidth,
    pgp: req.pgp,
    // `sheet` is not one of the declared options (unknown members are kept), so read it loosely.
    sheet: typeof o.sheet === "string" ? o.sheet : undefined,
    limits: req.limits,
  };
}

/**
 * The written columns: the mapping's targets, then schema properties with a
 * `default` that no target fills (validation adds those to every row).
 */
export function outputColumns(targets: readonly string[], definition: Record<string, unknown>): string[] {
  const props = (definition.properties ?? {}) as Record<string, unknown>;
  const extra = Object.keys(props).filter((p) => !targets.includes(p) && typeof props[p] === "object" && props[p] !== null && "default" in (props[p] as object));
  return [...targets, ...extra];
}

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function firstErrors(errors: readonly RowError[]): string {
  return errors
    .slice(0, ERRORS_IN_MESSAGE)
    .map((e) => `row ${e.inputRow} ${e.field}: ${e.message}`)
    .join("; ");
}

/** Compiles (and caches) the request's validator ahead of processing; a schema that cannot be compiled fails later, in processing. */
export function prepare(req: ProcessRequest): void {
  try {
    validatorFor(req.schema);
  } catch {}
}

/**
 * One file through the engine: the original is streamed from the store,
 * parsed, mapped, validated and written back as the processed file (and a
 * rejects file when rows are skipped or quarantined), a batch at a time. Never throws:
 * every failure is an outcome with `ok: false`, an `errorMessage` for a
 * person, and nothing left at `processedKey` or `rejectsKey`.
 */
export async function processFile(req: ProcessRequest, store: ObjectStore, signal?: AbortSignal, progress?: EngineProgress): Promise<ProcessOutcome> {
  const started = performance.now();
  const counts: RunCounts = { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 };
  const errors: RowError[] = [];
  let summary: ParseSummary | undefined;
  let processed: Sink | null = null;
  let rejects: Sink | null = null;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  // A parser that gives up early may leave the original unread; cancelling releases its file or connection.
  const release = async () => {
    await reader?.cancel().catch(() => {});
    reader = null;
  };
  const inputInfo = () => (summary ? { format: summary.format, encoding: summary.encoding, gzip: summary.gzip, ...(summary.pgp ? { pgp: summary.pgp } : {}) } : undefined);

  /** `internalError` set: not the file's fault, a retry may succeed; unset: the file's, a retry cannot help. */
  const fail = async (errorMessage: string, internalError?: string): Promise<ProcessOutcome> => {
    await release();
    const reason = new Error(errorMessage);
    await Promise.all([processed?.abort(reason), rejects?.abort(reason)]);
    // The puts are atomic, but a retried run may find an earlier attempt's files.
    await Promise.all([store.delete(req.processedKey).catch(() => {}), store.delete(req.rejectsKey).catch(() => {})]);
    const failure = internalError === undefined ? "input" : "internal";
    return { ok: false, errorMessage, internalError, failure, counts, errors, input: inputInfo(), processed: null, rejects: null, processMs: Math.round(performance.now() - started) };
  };

  try {
    const { fieldMappings, validations } = req.mappings;
    const policy = validations.onInvalidRow ?? "fail";
    const maxInvalidRows = validations.maxInvalidRows;
    const maxInvalidRatio = validations.maxInvalidRatio;
    const mapping = mappingFor(req, fieldMappings);
    const validator = validatorFor(req.schema);

    const original = await store.get(req.originalKey);
    if (!original) return await fail(`The original file is missing from storage (${req.originalKey}); upload it again.`);
    reader = original.getReader();
    const input = await openInput(progress ? counted(chunksOf(reader), progress) : chunksOf(reader), { ...parseOptions(req), fields: true });
    summary = input.summary;
    let header: HeaderSummary | undefined;
    const fieldNames = input.fields;
    const step = hasHeader(req, summary.format) ? headerStep(req, () => (fieldNames ? fieldNames.columns() : input.summary.columns), (s) => (header = s)) : undefined;

    const writer = createWriter(req.outputFormat, outputColumns(mapping.columns, req.schema.definition));
    processed = openSink(store, req.processedKey, writer.contentType);
    await processed.write(writer.begin());
    const rejectWriter = jsonWriter();

    trace(`${req.runId}: one worker reads the file`);
    const stop = await pumpRows(input, {
      mapping,
      validator,
      writer,
      policy,
      maxInvalidRows,
      counts,
      errors,
      signal,
      progress,
      rows: (text) => processed!.write(text),
      async rejects(text) {
        if (!rejects) {
          rejects = openSink(store, req.rejectsKey, "application/json");
          await rejects.write(rejectWriter.begin());
        }
        await rejects.write(text);
      },
      rejectWriter,
      header: step,
    });
    if (stop) return await fail(stop);
    if (signal?.aborted) throw new Cancelled();

    if (maxInvalidRatio !== undefined && counts.total > 0 && counts.invalid / counts.total > maxInvalidRatio) {
      const pct = ((100 * counts.invalid) / counts.total).toFixed(1);
      return await fail(
        `${plural(counts.invalid, "invalid row")} of ${counts.total} (${pct}%) is more than the error budget mappings.validations.maxInvalidRatio ${maxInvalidRatio}. First errors: ${firstErrors(errors)}.`,
      );
    }

    await release();
    trace(`${req.runId}: ${counts.total} rows read`);
    await processed.write(writer.end());
    const info = await processed.close();
    trace(`${req.runId}: processed file stored`);
    let rejectsInfo: ProcessOutcome["rejects"] = null;
    // Opened by pumpRows' callback (a closure, so the compiler still thinks it is null here).
    const rejectsSink = rejects as Sink | null;
    if (rejectsSink) {
      await rejectsSink.write(rejectWriter.end());
      const r = await rejectsSink.close();
      rejectsInfo = { key: req.rejectsKey, size: r.size, rows: counts.skipped + counts.quarantined };
    } else {
      await store.delete(req.rejectsKey);
    }
    const read = inputInfo();
    return {
      ok: true,
      counts,
      errors,
      input: read && header ? { ...read, header } : read,
      processed: { key: req.processedKey, size: info.size, rows: counts.valid, format: writer.format, mimetype: writer.contentType },
      rejects: rejectsInfo,
      processMs: Math.round(performance.now() - started),
    };
  } catch (e) {
    if (e instanceof EngineInputError || e instanceof MappingConfigError || e instanceof SchemaCompileError) return await fail(e.message);
    if (e instanceof Cancelled || signal?.aborted) return await fail("Processing was cancelled before it finished; the run can be retried.", "cancelled");
    const err = e instanceof Error ? e : new Error(String(e));
    // The file's shape, not the machine: the same input overflows the stack on every attempt.
    if (isStackOverflow(err)) {
      return await fail(
        `The file is nested too deeply to process (the engine ran out of stack after ${plural(counts.total, "row")}); ` +
          "retrying cannot help. Flatten the records, or send them as CSV.",
      );
    }
    return await fail(
      `The engine failed unexpectedly after ${plural(counts.total, "row")} (${err.message}); the run can be retried, and if it fails again the detail is in the service log.`,
      err.stack ?? err.message,
    );
  }
}

export function isStackOverflow(err: Error): boolean {
  return err instanceof RangeError && /call stack/i.test(err.message);
}

export interface PumpOptions {
  mapping: CompiledMapping;
  validator: RowValidator;
  writer: RowWriter;
  rejectWriter: RowWriter;
  policy: "fail" | "skip" | "quarantine";
  maxInvalidRows: number | undefined;
  counts: RunCounts;
  errors: RowError[];
  signal?: AbortSignal;
  /** Live counters (src/engine/types.ts): rows read so far, stored after each batch. */
  progress?: EngineProgress;
  /** The processed rows' text, a batch at a time. */
  rows(text: string): Promise<void>;
  /** Rejected rows' text (skip, quarantine), a batch at a time. */
  rejects(text: string): Promise<void>;
  /** Inputs with a header row: checked once, before the first row (or at the end of a file with none), and the mapping it gives used. */
  header?: HeaderStep;
}

/**
 * What an invalid row does under the policy (its errors already in
 * `rowErrors`): counted once (`skipped` or `quarantined`), its errors kept
 * among the run's first ones and, under `skip` and `quarantine`, a line
 * with `record` (the row as read) written to the rejects. Answers the
 * message when the maxInvalidRows budget stops reading, else null.
 */
export function invalidRow(
  o: Pick<PumpOptions, "policy" | "maxInvalidRows" | "counts" | "errors" | "rejectWriter">,
  rowIndex: number,
  rowErrors: readonly RowError[],
  record: unknown,
  reject: (text: string) => void,
): string | null {
  const { counts, errors } = o;
  counts.invalid++;
  for (let j = 0; j < rowErrors.length && errors.length < MAX_REPORTED_ERRORS; j++) errors.push(rowErrors[j]!);
  if (o.policy === "fail") return null;
  const outcome = o.policy === "quarantine" ? "quarantined" : "skipped";
  counts[outcome]++;
  reject(o.rejectWriter.rows([{ inputRow: rowIndex + 1, outcome, errors: rowErrors.map((e) => ({ field: e.field, message: e.message })), row: record }]));
  if (o.maxInvalidRows !== undefined && counts.invalid > o.maxInvalidRows) {
    return `More than ${plural(o.maxInvalidRows, "invalid row")} (the error budget mappings.validations.maxInvalidRows): ${counts.invalid} by row ${rowIndex + 1}. First errors: ${firstErrors(errors)}.`;
  }
  return null;
}

/**
 * Maps and validates one record: the row to write, or null when it is
 * invalid (its errors, less "is required" on a target whose transform already
 * failed, then in `rowErrors`, emptied first).
 */
export function mapRow(
  map: (row: never, rowIndex: number, errors: RowError[]) => Record<string, unknown>,
  validator: RowValidator,
  record: unknown,
  rowIndex: number,
  rowErrors: RowError[],
): Record<string, unknown> | null {
  rowErrors.length = 0;
  const row = map(record as never, rowIndex, rowErrors);
  if (rowErrors.length === 0) return validator.check(row, rowIndex, rowErrors) ? row : null;
  validator.check(row, rowIndex, rowErrors, new Set(rowErrors.map((e) => e.field)));
  return null;
}

/**
 * Maps, validates and writes every batch; answers the message a policy
 * stopped with (`fail`, the maxInvalidRows budget), or null when the input
 * was read to its end. Row indexes count from 0 at the first record read.
 */
export async function pumpRows(input: Pick<ParsedInput, "batches" | "fieldBatches" | "fields">, o: PumpOptions): Promise<string | null> {
  const { validator, writer, policy, counts, errors, signal } = o;
  let mapping = o.mapping;
  // CSV/TSV: rows are mapped from their field arrays (no object per record); the record is built only for a rejects line.
  const fields = input.fieldBatches && input.fields ? input.fields : null;
  const batches: AsyncIterable<readonly unknown[]> = fields ? input.fieldBatches! : input.batches;
  let map: (row: never, rowIndex: number, errors: RowError[]) => Record<string, unknown> = mapping.map;
  let mapperReady = !fields;
  const out: Record<string, unknown>[] = [];
  const rowErrors: RowError[] = [];
  let stop: string | null = null;
  let rejectText = "";
  // Collections between batches (src/runtime/gc.ts), where nothing parsed is alive.
  const collector = rowCollector();
  let headerDone = o.header === undefined;
  const checkHeader = (): string | null => {
    headerDone = true;
    const planned = o.header!.plan(o.header!.columns());
    if (typeof planned === "string") return planned;
    mapping = planned;
    if (!fields) map = mapping.map;
    return null;
  };
  for await (const batch of batches) {
    if (signal?.aborted) throw new Cancelled();
    if (!headerDone) {
      const problem = checkHeader();
      if (problem !== null) return problem;
    }
    if (!mapperReady) {
      map = mapping.forFields(fields!.columns());
      mapperReady = true;
    }
    let n = 0;
    for (let i = 0; i < batch.length; i++) {
      const record = batch[i] as never;
      const rowIndex = counts.total++;
      const row = mapRow(map, validator, record, rowIndex, rowErrors);
      if (row !== null) {
        out[n++] = row;
        continue;
      }
      const reject = policy !== "fail" ? (fields ? fields.record(record) : record) : null;
      stop = invalidRow(o, rowIndex, rowErrors, reject, (text) => {
        rejectText += text;
      });
      if (stop) break;
    }
    counts.valid += n;
    if (o.progress) o.progress[PROGRESS_ROWS] = counts.total;
    if (stop) return stop;
    // `fail` stops at the end of the batch that holds the first invalid row: the run fails
    // anyway, and the batch is enough to report the first errors.
    if (policy === "fail" && counts.invalid > 0) {
      return (
        `${plural(counts.invalid, "invalid row")} in the first ${plural(counts.total, "row")} read, and mappings.validations.onInvalidRow is 'fail'. ` +
        `First errors: ${firstErrors(errors)}. Fix the file, or set onInvalidRow to 'skip' or 'quarantine' to keep the valid rows.`
      );
    }
    if (n > 0) await o.rows(writer.rows(out, n));
    if (rejectText) {
      await o.rejects(rejectText);
      rejectText = "";
    }
    // Nothing of this batch stays reachable from here (producers never reuse a batch), so a collection finds it dead.
    const batchRows = batch.length;
    out.length = 0;
    (batch as unknown[]).length = 0;
    collector.add(batchRows);
  }
  // A header and no rows: the header is still checked.
  return headerDone ? null : checkHeader();
}
