import { boolean, index, integer, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { time } from "./columns";
import { workspaces } from "./workspaces";

/**
 * One row per run event that had at least one webhook to go to: the exact
 * body every attempt sends (retries and redeliveries send the same bytes).
 * Written in the transaction that enqueues the event's deliveries, so its
 * presence also marks the event as fanned out.
 */
export const webhookEvents = pgTable(
  "webhook_events",
  {
    /** The run event's id (evt_...), sent as `webhook-id`. */
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    pipelineRunId: text("pipeline_run_id").notNull(),
    body: text("body").notNull(),
    createdAt: time("created_at").notNull(),
  },
  (t) => [index("webhook_events_workspace_created_idx").on(t.workspaceId, t.createdAt)],
);

/** Every attempt to deliver an event to a webhook, automatic or by hand. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    /** No foreign key: the log outlives a deleted webhook or an unsubscribed hook. */
    webhookId: text("webhook_id").notNull(),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    pipelineRunId: text("pipeline_run_id").notNull(),
    /** The target as it was at this attempt. */
    url: text("url").notNull(),
    /** 1, 2, ... over all attempts of this event to this webhook. */
    attempt: integer("attempt").notNull(),
    /** automatic | manual */
    trigger: text("trigger").notNull(),
    success: boolean("success").notNull(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    responseExcerpt: text("response_excerpt"),
    error: text("error"),
    createdAt: time("created_at").notNull(),
    /** When the next automatic attempt is due; null when none follows. */
    nextAttemptAt: time("next_attempt_at"),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_attempt_idx").on(t.webhookId, t.eventId, t.attempt),
    index("webhook_deliveries_workspace_created_idx").on(t.workspaceId, t.createdAt),
    index("webhook_deliveries_run_idx").on(t.pipelineRunId),
  ],
);
