import { sql } from "drizzle-orm";
import { json, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { timestamps } from "./columns";
import { workspaces } from "./workspaces";

export const schemas = pgTable(
  "schemas",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    definition: json("definition").$type<Record<string, unknown>>().notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex("schemas_workspace_name_uq").on(t.workspaceId, sql`lower(${t.name})`)],
);
