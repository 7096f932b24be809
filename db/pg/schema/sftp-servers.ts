import { integer, pgTable, text } from "drizzle-orm/pg-core";
import { timestamps } from "./columns";
import { workspaces } from "./workspaces";

/** A customer's own SFTP endpoint that self-hosted connections log in to. */
export const sftpServers = pgTable("sftp_servers", {
  id: text("id").primaryKey(),
  workspaceId: text("workspace_id")
    .notNull()
    .references(() => workspaces.id, { onDelete: "cascade" }),
  host: text("host").notNull(),
  port: integer("port").notNull(),
  rootDirectory: text("root_directory").notNull(),
  inboundFolder: text("inbound_folder").notNull(),
  outboundFolder: text("outbound_folder").notNull(),
  /** Where the poller moves files it took from inboundFolder; null leaves them in place (remembered in sftp_pickups). */
  processedFolder: text("processed_folder"),
  ...timestamps,
});
