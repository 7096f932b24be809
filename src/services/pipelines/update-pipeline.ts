import { eq, sql } from "drizzle-orm";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { linkWebhooks, loadPipeline, loadPipelineRow, type PipelineRecord, type PipelineRow, pipelineConflict } from "./record";
import { checkMappingGate, checkReferences } from "./references";
import { type Direction, PIPELINE_READ_ONLY, UpdatePipelineInput } from "./shapes";
import { fieldsOf, recordAudit } from "../audit";
import { recordVersion, versionChanges } from "./versions";

/**
 * Partial update: members left out keep their value, and so do the members
 * of `mappings` left out; `webhookIds` replaces the links. A change of the
 * mappings or the schema makes a new version; a rename, (de)activation,
 * connection, direction or webhook change does not.
 */
export async function updatePipeline(
  ctx: ServiceContext,
  opts: CallOptions & { id: string; input: UpdatePipelineInput },
): Promise<PipelineRecord> {
  const input = parseInput(UpdatePipelineInput, withoutReadOnly(opts.input, PIPELINE_READ_ONLY));
  if (input.mappings?.fieldMappings) checkMappingGate(opts.actor, input.mappings.fieldMappings);
  const workspaceId = opts.actor.workspaceId;
  const p = ctx.db.t.pipelines;
  let name = input.name ?? "";
  return ctx.db
    .tx(async (w) => {
      const cur = await loadPipelineRow(ctx, { workspaceId, id: opts.id }, w);
      const next: PipelineRow = {
        ...cur,
        name: input.name ?? cur.name,
        connectionId: input.clientId ?? cur.connectionId,
        schemaId: input.schemaId ?? cur.schemaId,
        direction: input.direction ?? cur.direction,
        isActive: input.isActive ?? cur.isActive,
        mappings: {
          fieldMappings: input.mappings?.fieldMappings ?? cur.mappings.fieldMappings,
          options: input.mappings?.options ?? cur.mappings.options,
          validations: input.mappings?.validations ?? cur.mappings.validations,
        },
        updatedAt: ctx.clock.now(),
      };
      name = next.name;
      const webhookIds = input.webhookIds ? [...new Set(input.webhookIds)] : undefined;
      await checkReferences(ctx, w, {
        workspaceId,
        // A direction change re-checks the connection even when it stays the same.
        clientId: input.clientId ?? (input.direction ? next.connectionId : undefined),
        schemaId: input.schemaId,
        webhookIds,
        direction: next.direction as Direction,
      });
      // Only what changes how files are processed makes a version (docs/decisions/pipeline-versions.md).
      const changes = versionChanges(cur, next);
      if (changes.fields.length === 0) await w.update(p).set(next).where(eq(p.id, cur.id));
      else {
        // Counted in the database: two changes racing each get their own number.
        const [moved] = await w
          .update(p)
          .set({ ...next, version: sql`${p.version} + 1` })
          .where(eq(p.id, cur.id))
          .returning({ version: p.version });
        await recordVersion(ctx, w, { row: { ...next, version: moved!.version }, reason: "updated", changes, by: opts.actor });
      }
      await recordAudit(ctx, w, opts.actor, { workspaceId, action: "pipeline.update", resourceType: "pipeline", resourceId: cur.id, fields: fieldsOf(input) });
      if (webhookIds) await linkWebhooks(ctx, w, next, webhookIds);
      return loadPipeline(ctx, { workspaceId, id: cur.id }, w);
    })
    .catch((e) => pipelineConflict(e, name));
}
