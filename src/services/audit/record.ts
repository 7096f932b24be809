import type { Writer } from "../../../db/client";
import { newId } from "../../domain/ids";
import type { Actor, Origin, ServiceContext } from "../context";
import type { AuditActor } from "./shapes";

/**
 * A person acting without a session yet (signing up, logging in, following
 * a link), named by their account; `origin` as the transport saw the call.
 */
export interface PersonActing {
  userId: string;
  email: string;
  origin?: Origin;
}

/**
 * Who made a change: an API key or a person's session (an Actor, with the
 * origin its transport set), a person acting before they have a session,
 * or the admin CLI.
 */
export type ChangedBy = Actor | PersonActing | "cli";

/** The caller as the audit log names them (also kept with what they made, e.g. a pipeline version). */
export function auditActorOf(by: ChangedBy): AuditActor {
  if (by === "cli") return { type: "cli" };
  if (!("keyId" in by)) return { type: "person", id: by.userId, name: by.email };
  // A session's actor has no key: the person is who acted.
  if (by.userId) return { type: "person", id: by.userId, name: by.keyName };
  return { type: "key", ...(by.keyId ? { id: by.keyId } : {}), ...(by.keyName ? { name: by.keyName } : {}) };
}

function originOf(by: ChangedBy): Origin | undefined {
  return by === "cli" ? { surface: "cli", address: null, requestId: null } : by.origin;
}

export interface AuditChange {
  workspaceId: string;
  /** `<resourceType>.<verb>` */
  action: string;
  resourceType: string;
  resourceId: string;
  /** Names of the members set; never values. */
  fields?: readonly string[];
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
  const actor = auditActorOf(by);
  const origin = originOf(by);
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
    surface: origin?.surface ?? "trpc",
    address: origin?.address ?? null,
    requestId: origin?.requestId ?? null,
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
