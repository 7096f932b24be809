import { bigint, index, json, pgTable, text } from "drizzle-orm/pg-core";
import { time } from "./columns";
import { workspaces } from "./workspaces";

/**
 * Every file a transport received (hosted SFTP, customer SFTP poll, e-mail)
 * and what became of it: the runs it started, or why it started none. Nothing
 * a customer sent is dropped without a row here.
 */
export const arrivals = pgTable(
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
    size: bigint("size", { mode: "number" }),
    /** started | rejected | ignored */
    outcome: text("outcome").notNull(),
    reason: text("reason"),
    runIds: json("run_ids").$type<string[]>().notNull(),
    metadata: json("metadata").$type<Record<string, unknown>>().notNull(),
    createdAt: time("created_at").notNull(),
  },
  (t) => [index("arrivals_connection_created_idx").on(t.connectionId, t.createdAt), index("arrivals_workspace_created_idx").on(t.workspaceId, t.createdAt)],
);
