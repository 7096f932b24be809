import type { Writer } from "../../../db/client";
import { newId } from "../../domain/ids";
import type { Actor, ServiceContext } from "../context";
import type { AuditActor } from "./shapes";

/** Who made a change: an API key (with the origin its transport set), or the admin CLI. */
export type ChangedBy = Actor | "cli";

export interface AuditChange {
  workspaceId: string;
  /** `<resourceType>.<verb>` */
  action: string;
  resourceType: string;
  resourceId: string;
  /** Names of the members set; never values. */
  fields?: readonly string[];
}

/** The caller as the audit log names them (also kept with what they made, e.g. a pipeline version). */
export function auditActorOf(by: ChangedBy): AuditActor {
  if (by === "cli") return { type: "cli" };
  return { type: "key", ...(by.keyId ? { id: by.keyId } : {}), ...(by.keyName ? { name: by.keyName } : {}) };
}

/** Names of the members an input object sets (undefined left out), sorted. */
export function fieldsOf(input: unknown): string[] {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return [];
  return Object.keys(input)
    .filter((k) => (input as Record<string, unknown>)[k] !== undefined)
    .sort();
}

/**
 * Appends one audit record inside the caller's transaction (`w`): the change
 * and its record commit or roll back together. docs/decisions/audit.md.
 */
export async function recordAudit(ctx: ServiceContext, w: Writer, by: ChangedBy, change: AuditChange): Promise<void> {
  const cli = by === "cli";
  const actor = auditActorOf(by);
  await w.insert(ctx.db.t.auditEvents).values({
    id: newId("auditEvent"),
    workspaceId: change.workspaceId,
    actorType: actor.type,
    actorId: actor.id ?? null,
    actorName: actor.name ?? null,
    action: change.action,
    resourceType: change.resourceType,
    resourceId: change.resourceId,
    fields: [...(change.fields ?? [])],
    // A call made in process without an origin (tRPC's createCaller) is recorded as tRPC.
    surface: cli ? "cli" : (by.origin?.surface ?? "trpc"),
    address: cli ? null : (by.origin?.address ?? null),
    requestId: cli ? null : (by.origin?.requestId ?? null),
    createdAt: ctx.clock.now(),
  });
}

/**
 * A change of the object store only (documents): there is no transaction to
 * join, so the record is written on its own right after the change.
 */
export async function recordStoreChange(ctx: ServiceContext, by: ChangedBy, change: AuditChange): Promise<void> {
  await ctx.db.tx((w) => recordAudit(ctx, w, by, change));
}
