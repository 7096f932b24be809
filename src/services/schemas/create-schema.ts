import { newId } from "../../domain/ids";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { checkDefinition } from "./definition";
import { type SchemaRow, schemaConflict } from "./record";
import { CreateSchemaInput, SCHEMA_READ_ONLY } from "./shapes";
import { fieldsOf, recordAudit } from "../audit";

export async function createSchema(ctx: ServiceContext, opts: CallOptions & { input: CreateSchemaInput }): Promise<SchemaRow> {
  const input = parseInput(CreateSchemaInput, withoutReadOnly(opts.input, SCHEMA_READ_ONLY));
  checkDefinition(input.definition);
  const now = ctx.clock.now();
  const row: SchemaRow = {
    id: newId("schema"),
    workspaceId: opts.actor.workspaceId,
    name: input.name,
    description: input.description ?? null,
    definition: input.definition,
    createdAt: now,
    updatedAt: now,
  };
  await ctx.db
    .tx(async (w) => {
      await w.insert(ctx.db.t.schemas).values(row);
      await recordAudit(ctx, w, opts.actor, { workspaceId: row.workspaceId, action: "schema.create", resourceType: "schema", resourceId: row.id, fields: fieldsOf(input) });
    })
    .catch((e) => schemaConflict(e, row.name));
  return row;
}
