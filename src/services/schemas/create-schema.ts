import { newId } from "../../domain/ids";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { checkDefinition } from "./definition";
import { type SchemaRow, schemaConflict } from "./record";
import { CreateSchemaInput, SCHEMA_READ_ONLY } from "./shapes";

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
  await ctx.db.tx((w) => w.insert(ctx.db.t.schemas).values(row)).catch((e) => schemaConflict(e, row.name));
  return row;
}
