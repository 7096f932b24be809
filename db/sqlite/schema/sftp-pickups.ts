import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { time } from "./columns";
import { connections } from "./connections";
import { workspaces } from "./workspaces";

/**
 * What the customer-SFTP poller saw and took (src/services/run-path/doors/sftp-poll.ts). One
 * row per version of a remote file (connection, path, size, mtime): first
 * seen, then taken once its runs were started. A version that is taken is
 * never taken again; a new size or mtime is a new version.
 */
export const sftpPickups = sqliteTable(
  "sftp_pickups",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    connectionId: text("connection_id")
      .notNull()
      .references(() => connections.id, { onDelete: "cascade" }),
    remotePath: text("remote_path").notNull(),
    size: integer("size").notNull(),
    /** The remote modification time, whole seconds since the epoch. */
    mtime: integer("mtime").notNull(),
    firstSeenAt: time("first_seen_at").notNull(),
    /** Null while the file is only seen (it may still grow). */
    takenAt: time("taken_at"),
    /** started | rejected (the arrival's outcome) */
    outcome: text("outcome"),
    runIds: text("run_ids", { mode: "json" }).$type<string[]>().notNull(),
    arrivalId: text("arrival_id"),
    /** Where the file was moved (processedFolder), or why it could not be. */
    movedTo: text("moved_to"),
    moveError: text("move_error"),
  },
  (t) => [
    uniqueIndex("sftp_pickups_version_uq").on(t.connectionId, t.remotePath, t.size, t.mtime),
    index("sftp_pickups_connection_taken_idx").on(t.connectionId, t.takenAt),
  ],
);
