import type { RowError } from "../domain/runs";
import type { FieldMapping, PipelineMappings } from "../domain/mappings";
import { type HeaderPlan, planHeader } from "./header";
import { compileMapping, MappingConfigError, schemaProperties } from "./map";
import { openInput } from "./parse";
import { firstErrors, mapRow, plural } from "./process";
import { EngineInputError, type ParseOptions, type SchemaRef, type SourceRecord } from "./types";
import { SchemaCompileError, validatorFor } from "./validate";

/**
 * A dry run of a mapping on a sample held in memory: the engine's own
 * parser, mapping and validation, nothing written. Pure: the caller reads
 * and bounds the sample (src/services/pipelines/preview-pipeline.ts).
 */
export interface PreviewRequest {
  filename: string;
  bytes: Uint8Array;
  /** The sample was cut at the size limit: its last record may be cut too, and is left out. */
  truncated: boolean;
  mappings: PipelineMappings;
  schema: SchemaRef;
  /** Rows returned in full (the counts cover the whole sample). */
  limit: number;
  /** Reading stops after this long (between batches); the answer says `timedOut`. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface PreviewRow {
  /** 1-based over data rows, as a spreadsheet numbers them below its header. */
  inputRow: number;
  valid: boolean;
  /** The record as read. */
  source: SourceRecord;
  /** The mapped row (after transforms and validation's coercion and defaults); what the processed file would hold when `valid`. */
  row: Record<string, unknown>;
  errors: { field: string; message: string }[];
}

/** A mapped source column the header lacks, and header columns no mapping reads. */
export interface HeaderDiagnosis {
  missingColumns: string[];
  unusedColumns: string[];
  message: string | null;
}

export interface PreviewOutcome {
  detected: {
    format: string;
    encoding: string | null;
    gzip: boolean;
    delimiter: string | null;
    headerRow: boolean | null;
    sheet: string | null;
    recordPath: string | null;
  } | null;
  columns: string[];
  rows: PreviewRow[];
  /** Over the whole sample (less a cut last record), each row counted once, as a run would under the mapping's `onInvalidRow`. */
  counts: { total: number; valid: number; invalid: number; skipped: number; quarantined: number };
  /** What a run of this sample would end as: `failed` with the message a run would fail with, else `completed`. */
  run: { status: "completed" | "failed"; errorMessage: string | null };
  header: HeaderDiagnosis | null;
  truncated: boolean;
  timedOut: boolean;
  ms: number;
}

const HEADER_FORMATS = new Set(["csv", "tsv", "xlsx"]);

function parseOptionsOf(req: PreviewRequest): ParseOptions {
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
    sheet: typeof o.sheet === "string" ? o.sheet : undefined,
  };
}

/**
 * The header check of a preview: the run-time header plan (src/engine/header.ts) applied to the sample's columns,
 * with the pipeline's `headerMatch` and `missingColumns`: mapped sources the header lacks (with the closest
 * names in the message), the columns nothing reads, and the sources as the header spells them.
 */
export function previewHeaderPlan(req: Pick<PreviewRequest, "mappings" | "schema">, columns: readonly string[]): HeaderPlan {
  const def = req.schema.definition;
  const required = Array.isArray(def.required) ? def.required.filter((r): r is string => typeof r === "string") : [];
  const { fieldMappings, options } = req.mappings;
  return planHeader({ fieldMappings, schemaProperties: schemaProperties(def), required, columns, headerMatch: options.headerMatch, missingColumns: options.missingColumns });
}

const diagnosisOf = (plan: HeaderPlan): HeaderDiagnosis => ({
  missingColumns: [...plan.missing],
  unusedColumns: plan.summary.unusedColumns,
  message: plan.problem,
});

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** Runs the sample through the engine. Never throws for the sample's sake: an unreadable sample is `run.status: failed` with the run's message. */
export async function previewSample(req: PreviewRequest): Promise<PreviewOutcome> {
  const started = performance.now();
  const deadline = started + req.timeoutMs;
  const counts = { total: 0, valid: 0, invalid: 0, skipped: 0, quarantined: 0 };
  const rows: PreviewRow[] = [];
  const errors: RowError[] = [];
  const policy = req.mappings.validations.onInvalidRow ?? "fail";
  const out: PreviewOutcome = {
    detected: null,
    columns: [],
    rows,
    counts,
    run: { status: "completed", errorMessage: null },
    header: null,
    truncated: req.truncated,
    timedOut: false,
    ms: 0,
  };
  const finish = (errorMessage: string | null): PreviewOutcome => {
    out.run = errorMessage === null ? verdict() : { status: "failed", errorMessage };
    out.ms = Math.round(performance.now() - started);
    return out;
  };
  const verdict = (): PreviewOutcome["run"] => {
    const v = req.mappings.validations;
    const failed = (m: string) => ({ status: "failed" as const, errorMessage: m });
    if (counts.invalid > 0 && policy === "fail") {
      return failed(`${plural(counts.invalid, "invalid row")}, and mappings.validations.onInvalidRow is 'fail'. First errors: ${firstErrors(errors)}.`);
    }
    if (v.maxInvalidRows !== undefined && counts.invalid > v.maxInvalidRows) {
      return failed(`More than ${plural(v.maxInvalidRows, "invalid row")} (the error budget mappings.validations.maxInvalidRows): ${counts.invalid}. First errors: ${firstErrors(errors)}.`);
    }
    if (v.maxInvalidRatio !== undefined && counts.total > 0 && counts.invalid / counts.total > v.maxInvalidRatio) {
      return failed(`${plural(counts.invalid, "invalid row")} of ${counts.total} is more than the error budget mappings.validations.maxInvalidRatio ${v.maxInvalidRatio}.`);
    }
    return { status: "completed", errorMessage: null };
  };

  let held: { record: unknown; index: number } | null = null;
  const rowErrors: RowError[] = [];
  try {
    const compile = (fieldMappings: readonly FieldMapping[]) =>
      compileMapping({ fieldMappings, schemaProperties: schemaProperties(req.schema.definition), emptyCells: req.mappings.options.emptyCells });
    let mapping = compile(req.mappings.fieldMappings);
    let plan: HeaderPlan | null = null;
    const validator = validatorFor(req.schema);
    const opts = parseOptionsOf(req);
    // CSV/TSV: rows are mapped from their field arrays, as runs map them; a record object is built only for the rows returned.
    const input = await openInput(once(req.bytes), { ...opts, fields: true });
    const s = input.summary;
    const fields = input.fieldBatches && input.fields ? input.fields : null;
    const batches: AsyncIterable<readonly unknown[]> = fields ? input.fieldBatches! : input.batches;
    let map: (row: never, index: number, errors: RowError[]) => Record<string, unknown> = mapping.map;
    let mapperReady = !fields;
    const take = (item: unknown, index: number) => {
      counts.total++;
      const row = mapRow(map, validator, item, index, rowErrors);
      if (row !== null) counts.valid++;
      else {
        counts.invalid++;
        if (policy === "skip") counts.skipped++;
        if (policy === "quarantine") counts.quarantined++;
        for (const e of rowErrors) if (errors.length < 20) errors.push(e);
      }
      if (rows.length < req.limit) {
        const record = fields ? fields.record(item as never) : (item as SourceRecord);
        // An invalid row's mapped values are shown as they stood when validation stopped.
        const shown = row ?? mapping.map(record, index, []);
        rows.push({ inputRow: index + 1, valid: row !== null, source: record, row: shown, errors: rowErrors.map((e) => ({ field: e.field, message: e.message })) });
      }
    };
    let index = 0;
    try {
      for await (const batch of batches) {
        if (!mapperReady) {
          // As a run does: the header is checked before the first row, and sources are read as the header spells them.
          const columns = fields!.columns();
          if (req.mappings.options.headerRow !== false) {
            plan = previewHeaderPlan(req, columns);
            mapping = compile(plan.fieldMappings);
          }
          map = mapping.forFields(columns);
          mapperReady = true;
        }
        for (const record of batch) {
          // A cut sample's last record may itself be cut: each record waits for the next before it counts.
          if (req.truncated) {
            if (held) take(held.record, held.index);
            held = { record, index: index++ };
          } else take(record, index++);
        }
        if (req.signal?.aborted) return finish("The preview was cancelled.");
        if (performance.now() > deadline) {
          out.timedOut = true;
          break;
        }
      }
    } catch (e) {
      // Where a cut sample ends, a JSON or XML document is left open, or a gzip stream unfinished.
      if (!(req.truncated && e instanceof EngineInputError && counts.total + (held ? 1 : 0) > 0)) throw e;
    }
    out.detected = {
      format: s.format,
      encoding: s.encoding ?? null,
      gzip: s.gzip,
      delimiter: s.delimiter ?? null,
      headerRow: HEADER_FORMATS.has(s.format) ? (req.mappings.options.headerRow ?? true) : null,
      sheet: s.format === "xlsx" ? (opts.sheet ?? null) : null,
      recordPath: s.format === "json" || s.format === "xml" ? (opts.recordPath ?? null) : null,
    };
    out.columns = s.columns;
    if (HEADER_FORMATS.has(s.format) && out.detected.headerRow) {
      plan ??= previewHeaderPlan(req, s.columns);
      out.header = diagnosisOf(plan);
      // A run stops at a header that does not fit, before any row: so does the preview's verdict (the rows stay shown).
      if (plan.problem !== null) return finish(plan.problem);
    }
    return finish(null);
  } catch (e) {
    if (e instanceof EngineInputError || e instanceof MappingConfigError || e instanceof SchemaCompileError) {
      if (e instanceof EngineInputError && req.truncated) {
        return finish(`The sample was cut at the preview's size limit (PREVIEW_MAX_BYTES) before a whole record could be read: send a smaller sample (${e.message}).`);
      }
      return finish(e.message);
    }
    throw e;
  }
}
