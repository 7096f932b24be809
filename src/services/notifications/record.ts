import type { notificationPreferences, notificationSends } from "../../../db/pg/schema";
import type { NotifyMessage } from "../../adapters/notify/port";
import type { NotificationEventType, NotificationPreference, NotificationSend, NotifyChannel, SendStatus } from "./shapes";

export type PreferenceRow = typeof notificationPreferences.$inferSelect;
export type SendRow = typeof notificationSends.$inferSelect;

export function presentPreference(row: PreferenceRow): NotificationPreference {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    clientId: row.connectionId,
    eventType: row.eventType as NotificationEventType,
    channel: row.channel as NotifyChannel,
    isEnabled: row.isEnabled,
    recipients: row.recipients,
    metadata: row.metadata ?? null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** The rendered message stays internal; the record says who, over what, and what became of it. */
export function presentSend(row: SendRow): NotificationSend {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    clientId: row.connectionId,
    preferenceId: row.preferenceId,
    eventId: row.eventId,
    eventType: row.eventType as NotificationEventType,
    runId: row.runId,
    channel: row.channel as NotifyChannel,
    recipient: row.recipient,
    status: row.status as SendStatus,
    attempts: row.attempts,
    error: row.error ?? null,
    providerId: row.providerId ?? null,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    sentAt: row.sentAt ?? null,
  };
}

export type { NotifyMessage };
