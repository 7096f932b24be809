import { createHash } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { runKeys } from "../../../adapters/storage/keys";
import type { OutputFormat, ProcessRequest } from "../../../engine/types";
import type { ServiceContext } from "../../context";
import type { PipelineRow } from "../../pipelines/record";
import { OUTPUT_FORMATS, type PipelineMappings } from "../../pipelines/shapes";
import type { RunRow } from "../../runs/record";

/** What of a run the engine's request is made of (a run being created has all of it but its size). */
export type RunForEngine = Pick<RunRow, "id" | "workspaceId" | "filename" | "originalKey" | "direction" | "source" | "metadata"> & { size?: number };

export type SchemaRow = { id: string; updatedAt: Date; definition: unknown };

/** The pipeline's schema, in its workspace; null when it no longer exists. */
export async function schemaForEngine(ctx: ServiceContext, pipeline: Pick<PipelineRow, "schemaId" | "workspaceId">): Promise<SchemaRow | null> {
  const s = ctx.db.t.schemas;
  const [schema] = await ctx.db.read
    .select({ id: s.id, updatedAt: s.updatedAt, definition: s.definition })
    .from(s)
    .where(and(eq(s.id, pipeline.schemaId), eq(s.workspaceId, pipeline.workspaceId)));
  return schema ?? null;
}

/** What a run is processed with: one version of its pipeline (docs/decisions/pipeline-versions.md). */
export interface VersionForEngine {
  version: number;
  mappings: PipelineMappings;
  schema: SchemaRow;
}

/**
 * Version `version` (default the current one) of a pipeline, as stored: its
 * mappings and its schema's definition as they were. Null when it cannot be
 * had: no such version, or (for a pipeline whose current version was never
 * stored) no schema any more.
 */
export async function versionForEngine(
  ctx: ServiceContext,
  pipeline: Pick<PipelineRow, "id" | "workspaceId" | "version" | "mappings" | "schemaId">,
  version: number = pipeline.version,
): Promise<VersionForEngine | null> {
  const v = ctx.db.t.pipelineVersions;
  const [snap] = await ctx.db.read
    .select({ mappings: v.mappings, schemaId: v.schemaId, schemaUpdatedAt: v.schemaUpdatedAt, definition: v.schemaDefinition })
    .from(v)
    .where(and(eq(v.pipelineId, pipeline.id), eq(v.version, version)));
  if (snap) return { version, mappings: snap.mappings, schema: { id: snap.schemaId, updatedAt: snap.schemaUpdatedAt, definition: snap.definition } };
  if (version !== pipeline.version) return null;
  // Every pipeline's versions are written with it and by the migration; this is a safety net, not a path.
  const schema = await schemaForEngine(ctx, pipeline);
  return schema ? { version, mappings: pipeline.mappings, schema } : null;
}

/**
 * The engine's request for a run, built the same way whether the run's job
 * asks (processRun) or the file is still arriving (startRun, where the pool
 * may begin on it early and hands that work to the job only when its
 * request is this same one).
 */
export function engineRequest(ctx: ServiceContext, run: RunForEngine, pipeline: Pick<PipelineRow, "mappings">, schema: SchemaRow): ProcessRequest {
  const outbound = run.direction === "outbound";
  const outputFormat = outbound ? outboundFormat(run, pipeline.mappings.options.outputFormat) : "json";
  const keys = runKeys(run.workspaceId, run.id, run.filename, { processedExtension: outputFormat });
  return {
    runId: run.id,
    filename: run.filename,
    storage: ctx.storageConfig,
    originalKey: run.originalKey,
    processedKey: keys.processed,
    rejectsKey: keys.rejects,
    outputFormat,
    mappings: run.source === "outbound" ? outboundUploadInput(pipeline.mappings) : pipeline.mappings,
    schema: { id: schema.id, version: schemaVersion(schema.updatedAt, schema.definition), definition: schema.definition as Record<string, unknown> },
    size: run.size,
  };
}

/**
 * An outbound upload's file is always one JSON array (its parts combined),
 * whatever the client named it: read as JSON from the top level.
 */
function outboundUploadInput(mappings: PipelineMappings): PipelineMappings {
  const { recordPath: _recordPath, encoding: _encoding, ...options } = mappings.options;
  return { ...mappings, options: { ...options, format: "json" } };
}

/** An outbound upload may ask for its own format (kept in the run's arrival metadata); else the pipeline's, else JSON. */
function outboundFormat(run: Pick<RunRow, "metadata">, pipelineFormat: OutputFormat | undefined): OutputFormat {
  const asked = (run.metadata.arrival as { outputFormat?: unknown } | undefined)?.outputFormat;
  if (typeof asked === "string" && (OUTPUT_FORMATS as readonly string[]).includes(asked)) return asked as OutputFormat;
  return pipelineFormat ?? "json";
}

/**
 * The engine caches compiled validators by schema id and version. The
 * definition's hash is part of the version: two edits within one millisecond
 * (or under a stopped clock) must not reuse the old validator.
 */
export function schemaVersion(updatedAt: Date, definition: unknown): string {
  return `${updatedAt.toISOString()}#${createHash("sha256").update(JSON.stringify(definition)).digest("base64url").slice(0, 16)}`;
}
