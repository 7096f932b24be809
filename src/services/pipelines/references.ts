import { and, eq, inArray, sql } from "drizzle-orm";
import type { Reader } from "../../../db/client";
import { AppError } from "../../domain/errors";
import type { Actor, ServiceContext } from "../context";
import { FEATURES } from "../workspaces/shapes";
import { type Direction, type FieldMapping, mappingForm } from "./shapes";

const AGGREGATED = FEATURES[0];

/** Aggregated mappings are gated per workspace (`workspace:feature --enable aggregated-mappings`). */
export function checkMappingGate(actor: Actor, fieldMappings: readonly FieldMapping[]): void {
  if (actor.features.includes(AGGREGATED)) return;
  const i = fieldMappings.findIndex((m) => mappingForm(m) === "aggregated");
  if (i !== -1) {
    throw new AppError(
      "feature_not_enabled",
      `mappings.fieldMappings[${i}].sources: aggregated mappings are not enabled for this workspace`,
    );
  }
}

/** The connection, schema and webhooks a pipeline names must be the caller's own. */
export async function checkReferences(
  ctx: ServiceContext,
  r: Reader,
  opts: { workspaceId: string; clientId?: string; schemaId?: string; webhookIds?: string[]; direction: Direction },
): Promise<void> {
  const { connections: c, schemas: s, webhooks: wh } = ctx.db.t;
  if (opts.clientId !== undefined) {
    // With a schema too (every create), both in one statement: the schema joined to the connection's row.
    const schemaId = opts.schemaId;
    const [conn] =
      schemaId === undefined
        ? await r
            .select({ type: c.type, schemaId: sql<string | null>`null` })
            .from(c)
            .where(and(eq(c.id, opts.clientId), eq(c.workspaceId, opts.workspaceId)))
        : await r
            .select({ type: c.type, schemaId: s.id })
            .from(c)
            .leftJoin(s, and(eq(s.id, schemaId), eq(s.workspaceId, opts.workspaceId)))
            .where(and(eq(c.id, opts.clientId), eq(c.workspaceId, opts.workspaceId)));
    if (!conn) throw new AppError("not_found", `clientId: connection '${opts.clientId}' not found`);
    if (opts.direction === "outbound" && conn.type !== "SFTP") {
      throw new AppError("invalid_input", `direction: outbound pipelines deliver over SFTP; connection '${opts.clientId}' is ${conn.type}`);
    }
    if (schemaId !== undefined && conn.schemaId === null) throw new AppError("not_found", `schemaId: schema '${schemaId}' not found`);
  } else if (opts.schemaId !== undefined) {
    const [sch] = await r
      .select({ id: s.id })
      .from(s)
      .where(and(eq(s.id, opts.schemaId), eq(s.workspaceId, opts.workspaceId)));
    if (!sch) throw new AppError("not_found", `schemaId: schema '${opts.schemaId}' not found`);
  }
  if (opts.webhookIds && opts.webhookIds.length > 0) {
    const found = await r
      .select({ id: wh.id })
      .from(wh)
      .where(and(inArray(wh.id, opts.webhookIds), eq(wh.workspaceId, opts.workspaceId)));
    const have = new Set(found.map((f) => f.id));
    const i = opts.webhookIds.findIndex((id) => !have.has(id));
    if (i !== -1) throw new AppError("not_found", `webhookIds[${i}]: webhook '${opts.webhookIds[i]}' not found`);
  }
}
