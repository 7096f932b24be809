import { json, pgTable, text } from "drizzle-orm/pg-core";
import { timestamps } from "./columns";

export const workspaces = pgTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  email: text("email").notNull(),
  defaultVersion: text("default_version"),
  features: json("features").$type<string[]>().notNull(),
  ...timestamps,
});
