import { eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { linkWebhooks, loadPipeline, loadPipelineRow, type PipelineRecord, type PipelineRow, pipelineConflict } from "./record";
import { checkMappingGate, checkReferences } from "./references";
import { type Direction, UpdatePipelineInput } from "./shapes";

/** Partial update: members left out keep their value; `mappings` and `webhookIds` replace what was there. */
export async function updatePipeline(
  ctx: ServiceContext,
  opts: CallOptions & { id: string; input: UpdatePipelineInput },
): Promise<PipelineRecord> {
  const input = parseInput(UpdatePipelineInput, opts.input);
  if (input.mappings) checkMappingGate(opts.actor, input.mappings);
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
        mappings: input.mappings ?? cur.mappings,
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
      await w.update(p).set(next).where(eq(p.id, cur.id));
      if (webhookIds) await linkWebhooks(ctx, w, next, webhookIds);
      return loadPipeline(ctx, { workspaceId, id: cur.id }, w);
    })
    .catch((e) => pipelineConflict(e, name));
}
