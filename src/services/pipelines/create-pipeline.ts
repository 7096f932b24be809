import { newId } from "../../domain/ids";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { linkWebhooks, loadPipeline, type PipelineRecord, type PipelineRow, pipelineConflict } from "./record";
import { checkMappingGate, checkReferences } from "./references";
import { CreatePipelineInput, PIPELINE_READ_ONLY } from "./shapes";
import { recordVersion } from "./versions";
import { fieldsOf, recordAudit } from "../audit";

export async function createPipeline(
  ctx: ServiceContext,
  opts: CallOptions & { input: CreatePipelineInput },
): Promise<PipelineRecord> {
  const input = parseInput(CreatePipelineInput, withoutReadOnly(opts.input, PIPELINE_READ_ONLY));
  checkMappingGate(opts.actor, input.mappings.fieldMappings);
  const workspaceId = opts.actor.workspaceId;
  const webhookIds = [...new Set(input.webhookIds ?? [])];
  const now = ctx.clock.now();
  const row: PipelineRow = {
    id: newId("pipeline"),
    workspaceId,
    name: input.name,
    connectionId: input.clientId,
    schemaId: input.schemaId,
    direction: input.direction,
    isActive: input.isActive,
    mappings: input.mappings,
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
  return ctx.db
    .tx(async (w) => {
      await checkReferences(ctx, w, { workspaceId, ...input, webhookIds });
      await w.insert(ctx.db.t.pipelines).values(row);
      await recordVersion(ctx, w, { row, reason: "created", changes: { fields: [] }, by: opts.actor });
      await recordAudit(ctx, w, opts.actor, { workspaceId, action: "pipeline.create", resourceType: "pipeline", resourceId: row.id, fields: fieldsOf(input) });
      // Without webhooks the record is the row as inserted: nothing to read back (a round trip on Postgres).
      if (webhookIds.length === 0) return { row, webhooks: [] };
      await linkWebhooks(ctx, w, row, webhookIds, { created: true });
      return loadPipeline(ctx, { workspaceId, id: row.id }, w);
    })
    .catch((e) => pipelineConflict(e, row.name));
}
