import { and, desc, eq, inArray, isNotNull, or, sql } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { RunMetadata } from "../../domain/runs";
import type { ServiceContext } from "../context";
import { DELETED_PIPELINE, type RunRecord, selectRuns } from "../runs/record";

/** What the files and delta use cases need of a run, with the names shown to people. */
export interface RunFile {
  id: string;
  workspaceId: string;
  pipelineId: string;
  filename: string;
  status: string;
  mimetype: string;
  size: number;
  originalKey: string;
  processedKey: string | null;
  /** The rejects file (rows skipped or quarantined), when the run has one. */
  rejectsKey: string | null;
  processedAt: Date | null;
  metadata: RunMetadata;
  createdAt: Date;
  /** The pipeline's current name, or `DELETED PIPELINE`. */
  pipelineName: string;
  /** The connection's current name, else its name at the time of the run. */
  clientName: string;
}

/** The runs service's join (current pipeline and connection names), read as a RunFile. */
function toRunFile(rec: RunRecord): RunFile {
  const r = rec.row;
  return {
    id: r.id,
    workspaceId: r.workspaceId,
    pipelineId: r.pipelineId,
    filename: r.filename,
    status: r.status,
    mimetype: r.mimetype,
    size: r.size,
    originalKey: r.originalKey,
    processedKey: r.processedKey,
    rejectsKey: r.rejectsKey,
    processedAt: r.processedAt,
    metadata: r.metadata,
    createdAt: r.createdAt,
    pipelineName: rec.pipelineName ?? DELETED_PIPELINE,
    clientName: rec.connectionName ?? r.connectionName,
  };
}

/**
 * The workspace's runs with these ids, in the order asked. A run of another
 * workspace is reported exactly like one that does not exist, naming the
 * input member (`pipelineRunIds[2]`).
 */
export async function loadRuns(ctx: ServiceContext, opts: { workspaceId: string; ids: string[]; field: string }): Promise<RunFile[]> {
  const r = ctx.db.t.pipelineRuns;
  const rows = await selectRuns(ctx).where(and(eq(r.workspaceId, opts.workspaceId), inArray(r.id, opts.ids)));
  const byId = new Map(rows.map((rec) => [rec.row.id, toRunFile(rec)]));
  return opts.ids.map((id, i) => {
    const run = byId.get(id);
    if (!run) throw new AppError("not_found", `${opts.field}[${i}]: pipeline run '${id}' not found`);
    return run;
  });
}

export async function loadRun(ctx: ServiceContext, opts: { workspaceId: string; id: string; field?: string }): Promise<RunFile> {
  const r = ctx.db.t.pipelineRuns;
  const [rec] = await selectRuns(ctx).where(and(eq(r.workspaceId, opts.workspaceId), eq(r.id, opts.id)));
  if (!rec) throw new AppError("not_found", `${opts.field ? `${opts.field}: ` : ""}pipeline run '${opts.id}' not found`);
  return toRunFile(rec);
}

/** The newest processed run whose processed or received file has this name. */
export async function findRunByProcessedName(ctx: ServiceContext, opts: { workspaceId: string; filename: string }): Promise<RunFile> {
  const r = ctx.db.t.pipelineRuns;
  const stem = opts.filename.endsWith(PROCESSED_SUFFIX) ? opts.filename.slice(0, -PROCESSED_SUFFIX.length) : null;
  const names = [eq(r.filename, opts.filename)];
  if (stem !== null) {
    names.push(eq(r.filename, stem), sql`${r.filename} like ${`${stem.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`} escape '\\'`);
  }
  const rows = await selectRuns(ctx)
    .where(and(eq(r.workspaceId, opts.workspaceId), isNotNull(r.processedKey), isNotNull(r.processedAt), or(...names)))
    .orderBy(desc(r.processedAt), desc(r.id))
    .limit(500);
  const hit = rows.map(toRunFile).find((run) => processedJsonKey(run) && (run.filename === opts.filename || processedFilename(run) === opts.filename));
  if (!hit) throw new AppError("not_found", `filename: no processed file named '${opts.filename}'`);
  return hit;
}

const PROCESSED_SUFFIX = ".processed.json";
const COMPRESSED = /\.(gz|gzip)$/i;

/** The received name without its extension (and without `.gz`): `orders.csv.gz` -> `orders`. */
function stemOf(filename: string): string {
  const plain = filename.replace(COMPRESSED, "");
  const dot = plain.lastIndexOf(".");
  return dot > 0 ? plain.slice(0, dot) : plain;
}

/** `orders.csv` -> `orders.processed.json` (or `.csv`/`.xml` when the run wrote that format). */
export function processedFilename(run: Pick<RunFile, "filename" | "processedKey">): string {
  const ext = run.processedKey?.match(/\.([A-Za-z0-9]+)$/)?.[1]?.toLowerCase() ?? "json";
  return `${stemOf(run.filename)}.processed.${ext}`;
}

const MIMETYPES: Record<string, string> = { json: "application/json", csv: "text/csv", xml: "application/xml" };
export function processedMimetype(run: Pick<RunFile, "processedKey">): string {
  const ext = run.processedKey?.match(/\.([A-Za-z0-9]+)$/)?.[1]?.toLowerCase() ?? "json";
  return MIMETYPES[ext] ?? "application/octet-stream";
}

/** `orders.csv` -> `orders.rejects.json`. */
export function rejectsFilename(run: Pick<RunFile, "filename">): string {
  return `${stemOf(run.filename)}.rejects.json`;
}

/** A run has a processed file once the engine has written it and recorded when. */
export function hasProcessedFile(run: RunFile): run is RunFile & { processedKey: string } {
  return run.processedKey !== null && run.processedAt !== null;
}

/** The key of the run's processed file when it is JSON (searchable, comparable), else null. */
export function processedJsonKey(run: RunFile): string | null {
  return hasProcessedFile(run) && run.processedKey.toLowerCase().endsWith(".json") ? run.processedKey : null;
}

/** 409: the run exists but has no processed (JSON) file to read yet. */
export function noProcessedFile(run: RunFile, opts: { field?: string; json?: boolean } = {}): AppError {
  const prefix = opts.field ? `${opts.field}: ` : "";
  const why = opts.json && hasProcessedFile(run) ? "processed JSON file (its output is not JSON)" : `processed file (status ${run.status})`;
  return new AppError("conflict", `${prefix}pipeline run '${run.id}' has no ${why}`);
}

/** The run's processed JSON file, or a 409 saying why there is none. */
export function requireProcessedJson(run: RunFile, field?: string): string {
  const key = processedJsonKey(run);
  if (!key) throw noProcessedFile(run, { field, json: true });
  return key;
}
