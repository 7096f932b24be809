import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { time } from "./columns";
import { workspaces } from "./workspaces";

/**
 * Every file a transport received (hosted SFTP, customer SFTP poll, e-mail)
 * and what became of it: the runs it started, or why it started none. Nothing
 * a customer sent is dropped without a row here.
 */
export const arrivals = sqliteTable(
  "arrivals",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    /** No foreign key: the record outlives a deleted connection. */
    connectionId: text("connection_id").notNull(),
    transport: text("transport").notNull(),
    filename: text("filename"),
    path: text("path"),
    size: integer("size"),
    /** started | rejected | ignored */
    outcome: text("outcome").notNull(),
    reason: text("reason"),
    runIds: text("run_ids", { mode: "json" }).$type<string[]>().notNull(),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: time("created_at").notNull(),
  },
  (t) => [index("arrivals_connection_created_idx").on(t.connectionId, t.createdAt), index("arrivals_workspace_created_idx").on(t.workspaceId, t.createdAt)],
);
