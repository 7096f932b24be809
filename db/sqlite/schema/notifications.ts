import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { time, timestamps } from "./columns";
import { connections } from "./connections";
import { workspaces } from "./workspaces";

/** Who is told, over which channel, when a connection's run fails or succeeds. One row per (connection, event type, channel). */
export const notificationPreferences = sqliteTable(
  "notification_preferences",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    connectionId: text("connection_id")
      .notNull()
      .references(() => connections.id, { onDelete: "cascade" }),
    /** PIPELINE_RUN_FAILED | PIPELINE_RUN_SUCCEEDED */
    eventType: text("event_type").notNull(),
    /** EMAIL | SLACK | SMS */
    channel: text("channel").notNull(),
    isEnabled: integer("is_enabled", { mode: "boolean" }).notNull(),
    recipients: text("recipients", { mode: "json" }).$type<string[]>().notNull(),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>(),
    ...timestamps,
  },
  (t) => [uniqueIndex("notification_preferences_pair_uq").on(t.connectionId, t.eventType, t.channel)],
);

/**
 * One message to one recipient about one run event, and what became of it.
 * No foreign key to the connection or the preference: the record outlives both.
 */
export const notificationSends = sqliteTable(
  "notification_sends",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    connectionId: text("connection_id").notNull(),
    preferenceId: text("preference_id").notNull(),
    /** The run event's id: one send per event, preference and recipient. */
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    runId: text("run_id").notNull(),
    channel: text("channel").notNull(),
    recipient: text("recipient").notNull(),
    /** pending | sent | failed */
    status: text("status").notNull(),
    attempts: integer("attempts").notNull(),
    error: text("error"),
    /** The provider's id of the message (SMTP Message-ID, Slack ts, Twilio SID). */
    providerId: text("provider_id"),
    /** What is sent, rendered when the event happened. */
    message: text("message", { mode: "json" }).$type<{ subject: string; text: string; html?: string }>().notNull(),
    sentAt: time("sent_at"),
    ...timestamps,
  },
  (t) => [
    uniqueIndex("notification_sends_event_uq").on(t.eventId, t.preferenceId, t.recipient),
    index("notification_sends_workspace_created_idx").on(t.workspaceId, t.createdAt),
    index("notification_sends_run_idx").on(t.runId),
  ],
);
