import { and, eq, sql } from "drizzle-orm";
import type { Writer } from "../../../db/client";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { checkDefinition } from "./definition";
import { loadSchema, type SchemaRow, schemaConflict } from "./record";
import { UpdateSchemaInput, SCHEMA_READ_ONLY } from "./shapes";
import { type ChangedBy, fieldsOf, recordAudit } from "../audit";
import { recordVersion } from "../pipelines/versions";

export async function updateSchema(
  ctx: ServiceContext,
  opts: CallOptions & { id: string; input: UpdateSchemaInput },
): Promise<SchemaRow> {
  const input = parseInput(UpdateSchemaInput, withoutReadOnly(opts.input, SCHEMA_READ_ONLY));
  if (input.definition) checkDefinition(input.definition);
  const s = ctx.db.t.schemas;
  let name = input.name ?? "";
  return ctx.db
    .tx(async (w) => {
      const cur = await loadSchema(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
      const next: SchemaRow = {
        ...cur,
        name: input.name ?? cur.name,
        definition: input.definition ?? cur.definition,
        description: input.description === undefined ? cur.description : input.description,
        updatedAt: ctx.clock.now(),
      };
      name = next.name;
      await w.update(s).set(next).where(eq(s.id, cur.id));
      if (!Bun.deepEquals(cur.definition, next.definition)) await newPipelineVersions(ctx, w, cur, opts.actor);
      await recordAudit(ctx, w, opts.actor, { workspaceId: cur.workspaceId, action: "schema.update", resourceType: "schema", resourceId: cur.id, fields: fieldsOf(input) });
      return next;
    })
    .catch((e) => schemaConflict(e, name));
}

/**
 * A new definition changes how every pipeline validating against the schema
 * processes files: each gets a new version holding it (a rename or a new
 * description does not; docs/decisions/pipeline-versions.md).
 */
async function newPipelineVersions(ctx: ServiceContext, w: Writer, schema: SchemaRow, by: ChangedBy): Promise<void> {
  const p = ctx.db.t.pipelines;
  const moved = await w
    .update(p)
    .set({ version: sql`${p.version} + 1`, updatedAt: ctx.clock.now() })
    .where(and(eq(p.schemaId, schema.id), eq(p.workspaceId, schema.workspaceId)))
    .returning({ id: p.id, workspaceId: p.workspaceId, version: p.version, mappings: p.mappings, schemaId: p.schemaId });
  for (const row of moved) {
    await recordVersion(ctx, w, { row, reason: "schemaUpdated", changes: { fields: ["schema.definition"] }, by });
  }
}
