import { notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import { type PreviewOutcome, previewSample } from "../../engine/preview";
import type { CallOptions, ServiceContext } from "../context";
import { schemaForEngine, schemaVersion } from "../run-path/process/engine-request";
import type { Sample } from "../shared/sample";
import { loadPipelineRow } from "./record";
import { checkMappingGate } from "./references";
import { PreviewDraftInput, PreviewPipelineInput } from "./preview-shapes";
import type { PipelineMappings } from "./shapes";

export interface PreviewPipelineOptions extends CallOptions {
  id: string;
  /** Read and cut by the transport (readSample, sampleFromInput). */
  sample: Sample;
  input: unknown;
}

/**
 * A dry run: the sample through the engine under the pipeline's mappings
 * and schema, or unsaved ones given instead. Nothing is stored, no run is
 * made, no object written; the sample lives in memory for the call only.
 * Read in this thread, not on the engine's workers, since those read from
 * the object store (the sample is bounded by PREVIEW_MAX_BYTES and the time
 * by PREVIEW_TIMEOUT_MS, docs/decisions/preview.md).
 */
export type PipelinePreviewResult = PreviewOutcome & { applied: { mappings: "saved" | "given"; schemaId: string } };

export async function previewPipeline(ctx: ServiceContext, opts: PreviewPipelineOptions & { signal?: AbortSignal }): Promise<PipelinePreviewResult> {
  const workspaceId = opts.actor.workspaceId;
  const input = parseInput(PreviewPipelineInput, opts.input ?? {});
  const pipeline = await loadPipelineRow(ctx, { workspaceId, id: opts.id });
  if (input.mappings) checkMappingGate(opts.actor, input.mappings.fieldMappings);
  const schemaId = input.schemaId ?? pipeline.schemaId;
  const outcome = await previewWith(ctx, { ...opts, schemaId, mappings: input.mappings ?? pipeline.mappings, limit: input.limit });
  return { ...outcome, applied: { mappings: input.mappings ? "given" : "saved", schemaId } };
}

/**
 * The same dry run for a pipeline not saved yet (the dashboard's mapping
 * editor before the first save): a schema of the workspace and the mappings
 * to try, checked as on create. docs/decisions/preview.md.
 */
export async function previewDraft(
  ctx: ServiceContext,
  opts: CallOptions & { sample: Sample; input: unknown; signal?: AbortSignal },
): Promise<PipelinePreviewResult> {
  const input = parseInput(PreviewDraftInput, opts.input ?? {});
  checkMappingGate(opts.actor, input.mappings.fieldMappings);
  const outcome = await previewWith(ctx, { ...opts, schemaId: input.schemaId, mappings: input.mappings, limit: input.limit });
  return { ...outcome, applied: { mappings: "given", schemaId: input.schemaId } };
}

async function previewWith(
  ctx: ServiceContext,
  opts: CallOptions & { sample: Sample; schemaId: string; mappings: PipelineMappings; limit: number; signal?: AbortSignal },
): Promise<PreviewOutcome> {
  const schema = await schemaForEngine(ctx, { workspaceId: opts.actor.workspaceId, schemaId: opts.schemaId });
  if (!schema) throw notFound("schema", opts.schemaId);
  return previewSample({
    filename: opts.sample.filename,
    bytes: opts.sample.bytes,
    truncated: opts.sample.truncated,
    mappings: opts.mappings,
    schema: { id: schema.id, version: schemaVersion(schema.updatedAt, schema.definition), definition: schema.definition as Record<string, unknown> },
    limit: opts.limit,
    timeoutMs: ctx.settings.preview.timeoutMs,
    signal: opts.signal,
  });
}
