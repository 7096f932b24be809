import { sqliteTable, text } from "drizzle-orm/sqlite-core";
import { timestamps } from "./columns";

export const workspaces = sqliteTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  email: text("email").notNull(),
  defaultVersion: text("default_version"),
  features: text("features", { mode: "json" }).$type<string[]>().notNull(),
  ...timestamps,
});
