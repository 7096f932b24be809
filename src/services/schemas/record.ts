import { and, eq } from "drizzle-orm";
import { type Reader, uniqueViolation } from "../../../db/client";
import type { schemas } from "../../../db/pg/schema";
import { AppError, notFound } from "../../domain/errors";
import type { ServiceContext } from "../context";
import type { Schema } from "./shapes";

export type SchemaRow = typeof schemas.$inferSelect;

export async function loadSchema(ctx: ServiceContext, opts: { workspaceId: string; id: string }, r: Reader = ctx.db.read) {
  const s = ctx.db.t.schemas;
  const [row] = await r.select().from(s).where(and(eq(s.id, opts.id), eq(s.workspaceId, opts.workspaceId)));
  if (!row) throw notFound("schema", opts.id);
  return row;
}

export function presentSchema(row: SchemaRow): Schema {
  const out: Schema = {
    id: row.id,
    name: row.name,
    workspaceId: row.workspaceId,
    definition: row.definition,
    isActive: true,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
  if (row.description != null) out.description = row.description;
  return out;
}

export function schemaConflict(e: unknown, name: string): never {
  if (uniqueViolation(e)) throw new AppError("conflict", `name: a schema named '${name}' already exists`);
  throw e;
}
