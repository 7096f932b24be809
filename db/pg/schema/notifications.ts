import { boolean, index, integer, json, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { time, timestamps } from "./columns";
import { connections } from "./connections";
import { workspaces } from "./workspaces";

/** Who is told, over which channel, when a connection's run fails or succeeds. One row per (connection, event type, channel). */
export const notificationPreferences = pgTable(
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
    isEnabled: boolean("is_enabled").notNull(),
    recipients: json("recipients").$type<string[]>().notNull(),
    metadata: json("metadata").$type<Record<string, unknown>>(),
    ...timestamps,
  },
  (t) => [uniqueIndex("notification_preferences_pair_uq").on(t.connectionId, t.eventType, t.channel)],
);

/**
 * One message to one recipient about one run event, and what became of it.
 * No foreign key to the connection or the preference: the record outlives both.
 */
export const notificationSends = pgTable(
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
    message: json("message").$type<{ subject: string; text: string; html?: string }>().notNull(),
    sentAt: time("sent_at"),
    ...timestamps,
  },
  (t) => [
    uniqueIndex("notification_sends_event_uq").on(t.eventId, t.preferenceId, t.recipient),
    index("notification_sends_workspace_created_idx").on(t.workspaceId, t.createdAt),
    index("notification_sends_run_idx").on(t.runId),
  ],
);
