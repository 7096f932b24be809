import type { Writer } from "../../../db/client";
import { newId } from "../../domain/ids";
import type { Actor, Origin, ServiceContext } from "../context";

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

interface Who {
  type: "key" | "person" | "cli";
  id: string | null;
  name: string | null;
  origin?: Origin;
}

function whoOf(by: ChangedBy): Who {
  if (by === "cli") return { type: "cli", id: null, name: null, origin: { surface: "cli", address: null, requestId: null } };
  if (!("keyId" in by)) return { type: "person", id: by.userId, name: by.email, origin: by.origin };
  // A session's actor has no key: the person is who acted.
  if (by.userId) return { type: "person", id: by.userId, name: by.keyName, origin: by.origin };
  return { type: "key", id: by.keyId, name: by.keyName, origin: by.origin };
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
  const who = whoOf(by);
  await w.insert(ctx.db.t.auditEvents).values({
    id: newId("auditEvent"),
    workspaceId: change.workspaceId,
    actorType: who.type,
    actorId: who.id,
    actorName: who.name,
    action: change.action,
    resourceType: change.resourceType,
    resourceId: change.resourceId,
    fields: [...(change.fields ?? [])],
    // A call made in process without an origin (tRPC's createCaller) is recorded as tRPC.
    surface: who.origin?.surface ?? "trpc",
    address: who.origin?.address ?? null,
    requestId: who.origin?.requestId ?? null,
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
