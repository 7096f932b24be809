import { eq } from "drizzle-orm";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { checkDefinition } from "./definition";
import { loadSchema, type SchemaRow, schemaConflict } from "./record";
import { UpdateSchemaInput, SCHEMA_READ_ONLY } from "./shapes";
import { fieldsOf, recordAudit } from "../audit";

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
      await recordAudit(ctx, w, opts.actor, { workspaceId: cur.workspaceId, action: "schema.update", resourceType: "schema", resourceId: cur.id, fields: fieldsOf(input) });
      return next;
    })
    .catch((e) => schemaConflict(e, name));
}
