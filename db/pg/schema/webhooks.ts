import { boolean, index, json, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { timestamps } from "./columns";
import { pipelines } from "./pipelines";
import { workspaces } from "./workspaces";

export const webhooks = pgTable(
  "webhooks",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    url: text("url").notNull(),
    /** The signing secret, encrypted; returned in clear only once, on creation. */
    secretEnc: text("secret_enc").notNull(),
    /** Run event types it receives (pipeline_run.completed, ...). */
    events: json("events").$type<string[]>().notNull(),
    isActive: boolean("is_active").notNull(),
    description: text("description"),
    /** WEBHOOK: receives the events of the pipelines linked to it; PIPELINE_RUN_EVENT: every run event of the workspace (automation platforms). */
    kind: text("kind").notNull().default("WEBHOOK"),
    ...timestamps,
  },
  (t) => [index("webhooks_workspace_idx").on(t.workspaceId)],
);

export const pipelineWebhooks = pgTable(
  "pipeline_webhooks",
  {
    pipelineId: text("pipeline_id")
      .notNull()
      .references(() => pipelines.id, { onDelete: "cascade" }),
    webhookId: text("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.pipelineId, t.webhookId] }), index("pipeline_webhooks_webhook_idx").on(t.webhookId)],
);
