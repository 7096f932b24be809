import { index, pgTable, text } from "drizzle-orm/pg-core";
import { time, timestamps } from "./columns";
import { workspaces } from "./workspaces";

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    role: text("role").notNull(),
    /** The public lookup part of the key; the secret part is only stored as `secretHash`. */
    lookup: text("lookup").notNull().unique(),
    secretHash: text("secret_hash").notNull(),
    /** First characters of the key, shown in listings so a key can be recognised. */
    start: text("start").notNull(),
    lastUsedAt: time("last_used_at"),
    revokedAt: time("revoked_at"),
    ...timestamps,
  },
  (t) => [index("api_keys_workspace_idx").on(t.workspaceId)],
);
