import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { time } from "./columns";

/**
 * One row per change, written by the service that makes it in the same
 * transaction (docs/decisions/audit.md). Append-only: nothing updates a row;
 * only the retention job deletes rows older than AUDIT_RETENTION_DAYS. No
 * foreign keys, so a record outlives what it describes.
 */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    /** key | cli */
    actorType: text("actor_type").notNull(),
    actorId: text("actor_id"),
    actorName: text("actor_name"),
    action: text("action").notNull(),
    resourceType: text("resource_type").notNull(),
    resourceId: text("resource_id").notNull(),
    /** Names of the members changed; never their values. */
    fields: text("fields", { mode: "json" }).$type<string[]>().notNull(),
    /** rest | graphql | trpc | cli */
    surface: text("surface").notNull(),
    address: text("address"),
    requestId: text("request_id"),
    createdAt: time("created_at").notNull(),
  },
  (t) => [
    index("audit_events_workspace_created_idx").on(t.workspaceId, t.createdAt),
    index("audit_events_resource_idx").on(t.workspaceId, t.resourceType, t.resourceId),
    index("audit_events_created_idx").on(t.createdAt),
  ],
);
