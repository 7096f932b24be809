import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import { isAppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { checkDefinition } from "./definition";
import { loadSchema } from "./record";

const CheckSchemaInput = z.strictObject({
  definition: z.record(z.string(), z.unknown(), { error: (i) => (i.input === undefined ? "is required" : "must be a JSON Schema object") }),
});
export type CheckSchemaInput = z.input<typeof CheckSchemaInput>;

/** What a definition check answers: the first problem, in the words a save would use, or none. */
export interface SchemaCheck {
  valid: boolean;
  message: string | null;
}

/**
 * Checks a definition as creating or updating a schema would (the same
 * meta-schema, row rules and compilation), stores nothing, and answers the
 * problem as data rather than an error: an editor asks on every change.
 */
export async function checkSchemaDefinition(_ctx: ServiceContext, opts: CallOptions & { input: unknown }): Promise<SchemaCheck> {
  try {
    const input = parseInput(CheckSchemaInput, opts.input);
    checkDefinition(input.definition);
    return { valid: true, message: null };
  } catch (e) {
    if (isAppError(e) && e.code === "invalid_input") return { valid: false, message: e.message };
    throw e;
  }
}

/** The pipelines of the caller's workspace that validate rows against the schema (by name). Another workspace's schema is a 404. */
export async function schemaPipelines(
  ctx: ServiceContext,
  opts: CallOptions & { id: string },
): Promise<{ id: string; name: string; direction: string; connectionId: string; isActive: boolean }[]> {
  const workspaceId = opts.actor.workspaceId;
  await loadSchema(ctx, { workspaceId, id: opts.id });
  const p = ctx.db.t.pipelines;
  return ctx.db.read
    .select({ id: p.id, name: p.name, direction: p.direction, connectionId: p.connectionId, isActive: p.isActive })
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), eq(p.schemaId, opts.id)))
    .orderBy(asc(p.name));
}
