import { and, eq } from "drizzle-orm";
import type { Reader, Writer } from "../../../db/client";
import type { pipelineVersions } from "../../../db/pg/schema";
import { currentRequestId } from "../../domain/request-context";
import { auditActorOf, type ChangedBy } from "../audit";
import type { ServiceContext } from "../context";
import type { PipelineRow } from "./record";
import type { FieldMapping, PipelineMappings } from "./shapes";
import type { PipelineVersion, VersionChanges, VersionedField, VersionReason } from "./version-shapes";

export type PipelineVersionRow = typeof pipelineVersions.$inferSelect;

/** What of a pipeline decides how its files are processed (docs/decisions/pipeline-versions.md). */
type Versioned = Pick<PipelineRow, "mappings" | "schemaId">;

const same = (a: unknown, b: unknown) => Bun.deepEquals(a ?? null, b ?? null);

/** Names of the members of two option objects that differ (set, changed or removed), sorted. */
function changedKeys(a: Record<string, unknown> = {}, b: Record<string, unknown> = {}): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !same(a[k], b[k])).sort();
}

function fieldMappingChanges(before: FieldMapping[], after: FieldMapping[]): NonNullable<VersionChanges["fieldMappings"]> {
  const was = new Map(before.map((m) => [m.target, m]));
  const now = new Map(after.map((m) => [m.target, m]));
  return {
    added: after.filter((m) => !was.has(m.target)).map((m) => m.target),
    removed: before.filter((m) => !now.has(m.target)).map((m) => m.target),
    changed: after.filter((m) => was.has(m.target) && !same(was.get(m.target), m)).map((m) => m.target),
  };
}

/**
 * What changed between two states of a pipeline that matters to how it
 * processes files; `fields` is empty when nothing did (no new version).
 * Reordering the field mappings changes the output's column order, so it
 * counts, even when no entry changed.
 */
export function versionChanges(before: Versioned, after: Versioned): VersionChanges {
  const fields: VersionedField[] = [];
  const out: VersionChanges = { fields };
  const a: PipelineMappings = before.mappings;
  const b: PipelineMappings = after.mappings;
  if (!same(a.fieldMappings, b.fieldMappings)) {
    fields.push("mappings.fieldMappings");
    out.fieldMappings = fieldMappingChanges(a.fieldMappings ?? [], b.fieldMappings ?? []);
  }
  const options = changedKeys(a.options, b.options);
  if (options.length > 0) {
    fields.push("mappings.options");
    out.options = options;
  }
  const validations = changedKeys(a.validations, b.validations);
  if (validations.length > 0) {
    fields.push("mappings.validations");
    out.validations = validations;
  }
  if (before.schemaId !== after.schemaId) {
    fields.push("schemaId");
    out.schemaId = { from: before.schemaId, to: after.schemaId };
  }
  return out;
}

/**
 * Writes version `row.version` of a pipeline as `row` stands, with its
 * schema's definition read in the same transaction, so the snapshot is
 * exactly what a run under this version processes with.
 */
export async function recordVersion(
  ctx: ServiceContext,
  w: Writer,
  opts: { row: Pick<PipelineRow, "id" | "workspaceId" | "version" | "mappings" | "schemaId">; reason: VersionReason; changes: VersionChanges; by: ChangedBy },
): Promise<void> {
  const s = ctx.db.t.schemas;
  const [schema] = await w
    .select({ updatedAt: s.updatedAt, definition: s.definition })
    .from(s)
    .where(and(eq(s.id, opts.row.schemaId), eq(s.workspaceId, opts.row.workspaceId)));
  // The references were checked in this transaction: a schema missing now is a bug, not a caller's mistake.
  if (!schema) throw new Error(`schema '${opts.row.schemaId}' of pipeline '${opts.row.id}' vanished while its version was written`);
  const requestId = opts.by === "cli" ? null : (opts.by.origin?.requestId ?? currentRequestId() ?? null);
  await w.insert(ctx.db.t.pipelineVersions).values({
    pipelineId: opts.row.id,
    version: opts.row.version,
    workspaceId: opts.row.workspaceId,
    reason: opts.reason,
    changes: opts.changes,
    mappings: opts.row.mappings,
    schemaId: opts.row.schemaId,
    schemaUpdatedAt: schema.updatedAt,
    schemaDefinition: schema.definition,
    createdBy: auditActorOf(opts.by),
    requestId,
    createdAt: ctx.clock.now(),
  });
}

/** One version of a pipeline of the workspace; null when there is no such version (or pipeline). */
export async function loadVersion(
  ctx: ServiceContext,
  opts: { workspaceId: string; pipelineId: string; version: number },
  r: Reader = ctx.db.read,
): Promise<PipelineVersionRow | null> {
  const v = ctx.db.t.pipelineVersions;
  const [row] = await r
    .select()
    .from(v)
    .where(and(eq(v.pipelineId, opts.pipelineId), eq(v.version, opts.version), eq(v.workspaceId, opts.workspaceId)));
  return row ?? null;
}

export function presentVersion(r: PipelineVersionRow): PipelineVersion {
  return {
    pipelineId: r.pipelineId,
    version: r.version,
    reason: r.reason as PipelineVersion["reason"],
    changes: r.changes,
    mappings: r.mappings,
    schemaId: r.schemaId,
    ...(r.createdBy ? { createdBy: r.createdBy } : {}),
    ...(r.requestId ? { requestId: r.requestId } : {}),
    createdAt: r.createdAt,
  };
}
