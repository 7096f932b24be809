import { sql } from "drizzle-orm";
import { boolean, index, integer, json, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import type { PipelineMappings } from "../../../src/domain/mappings";
import { timestamps } from "./columns";
import { connections } from "./connections";
import { schemas } from "./schemas";
import { workspaces } from "./workspaces";

export const pipelines = pgTable(
  "pipelines",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    connectionId: text("connection_id")
      .notNull()
      .references(() => connections.id, { onDelete: "restrict" }),
    schemaId: text("schema_id")
      .notNull()
      .references(() => schemas.id, { onDelete: "restrict" }),
    direction: text("direction").notNull(),
    isActive: boolean("is_active").notNull(),
    mappings: json("mappings").$type<PipelineMappings>().notNull(),
    /** The current version (pipeline_versions); every change to how files are processed adds one. */
    version: integer("version").notNull().default(1),
    ...timestamps,
  },
  (t) => [
    uniqueIndex("pipelines_workspace_name_uq").on(t.workspaceId, sql`lower(${t.name})`),
    index("pipelines_connection_idx").on(t.connectionId),
    index("pipelines_schema_idx").on(t.schemaId),
  ],
);
