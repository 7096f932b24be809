import { and, asc, eq } from "drizzle-orm";
import type { Reader } from "../../../db/client";
import { newId } from "../../domain/ids";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import { loadConnection } from "../connections/record";
import type { CallOptions, ServiceContext } from "../context";
import type { PreferenceRow } from "./record";
import { PREFERENCE_READ_ONLY, PutNotificationPreferencesInput } from "./shapes";
import { recordAudit } from "../audit";

async function preferencesOf(ctx: ServiceContext, connectionId: string, r: Reader): Promise<PreferenceRow[]> {
  const p = ctx.db.t.notificationPreferences;
  return r.select().from(p).where(eq(p.connectionId, connectionId)).orderBy(asc(p.eventType), asc(p.channel));
}

/** The connection's preferences (by event type, then channel). Another workspace's connection is a 404. */
export async function getNotificationPreferences(ctx: ServiceContext, opts: CallOptions & { clientId: string }): Promise<PreferenceRow[]> {
  await loadConnection(ctx, { workspaceId: opts.actor.workspaceId, id: opts.clientId });
  return preferencesOf(ctx, opts.clientId, ctx.db.read);
}

/**
 * Drops `recipients` from disabled items before parsing: the spec says they
 * are ignored there, so they are neither checked nor stored (the stored list
 * is kept as it was). Read-only members a client echoes back are dropped too.
 */
function prepare(raw: unknown): unknown {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return raw;
  const body = raw as Record<string, unknown>;
  if (!Array.isArray(body.preferences)) return raw;
  return {
    ...body,
    preferences: body.preferences.map((item) => {
      const clean = withoutReadOnly(item, PREFERENCE_READ_ONLY);
      if (!clean || typeof clean !== "object" || Array.isArray(clean)) return clean;
      const { recipients, ...rest } = clean as Record<string, unknown>;
      return (clean as Record<string, unknown>).isEnabled === false ? rest : clean;
    }),
  };
}

/**
 * PUT: upserts each item on (eventType, channel) for the connection, in one
 * transaction; pairs not named keep their preference. Returns all of the
 * connection's preferences. A disabled item keeps the stored recipients (a
 * new one gets none); `metadata` left out keeps its value.
 */
export async function putNotificationPreferences(
  ctx: ServiceContext,
  opts: CallOptions & { clientId: string; input: unknown },
): Promise<PreferenceRow[]> {
  const p = ctx.db.t.notificationPreferences;
  return ctx.db.tx(async (w) => {
    // 404 before 400: an intruder learns nothing about what the body would have done.
    await loadConnection(ctx, { workspaceId: opts.actor.workspaceId, id: opts.clientId }, w);
    const input = parseInput(PutNotificationPreferencesInput, prepare(opts.input));
    const now = ctx.clock.now();
    await recordAudit(ctx, w, opts.actor, {
      workspaceId: opts.actor.workspaceId,
      action: "notificationPreferences.update",
      resourceType: "connection",
      resourceId: opts.clientId,
      fields: [...new Set(input.preferences.map((i) => `${i.eventType}/${i.channel}`))].sort(),
    });
    for (const item of input.preferences) {
      const set: Partial<PreferenceRow> = { isEnabled: item.isEnabled, updatedAt: now };
      if (item.isEnabled) set.recipients = item.recipients ?? [];
      if (item.metadata !== undefined) set.metadata = item.metadata;
      await w
        .insert(p)
        .values({
          id: newId("notificationPreference"),
          workspaceId: opts.actor.workspaceId,
          connectionId: opts.clientId,
          eventType: item.eventType,
          channel: item.channel,
          isEnabled: item.isEnabled,
          recipients: item.isEnabled ? (item.recipients ?? []) : [],
          metadata: item.metadata ?? null,
          createdAt: now,
          updatedAt: now,
        })
        .onConflictDoUpdate({ target: [p.connectionId, p.eventType, p.channel], set });
    }
    return preferencesOf(ctx, opts.clientId, w);
  });
}

/** Enabled preferences of a connection for one event type (the fan-out's question). */
export function enabledPreferences(ctx: ServiceContext, opts: { workspaceId: string; connectionId: string; eventType: string }): Promise<PreferenceRow[]> {
  const p = ctx.db.t.notificationPreferences;
  return ctx.db.read
    .select()
    .from(p)
    .where(and(eq(p.workspaceId, opts.workspaceId), eq(p.connectionId, opts.connectionId), eq(p.eventType, opts.eventType), eq(p.isEnabled, true)))
    .orderBy(asc(p.channel));
}
