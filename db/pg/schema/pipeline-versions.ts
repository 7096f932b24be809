import { index, integer, json, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import type { PipelineMappings } from "../../../src/domain/mappings";
import type { VersionActor, VersionChanges } from "../../../src/domain/pipeline-versions";
import { time } from "./columns";
import { pipelines } from "./pipelines";
import { workspaces } from "./workspaces";

/**
 * What a pipeline processed files with, one row per version
 * (docs/decisions/pipeline-versions.md): its mappings, its schema's id and
 * the schema's definition as they were, so a run reprocessed under an old
 * version reads the file exactly as that version did. Written once, never
 * updated; deleted with the pipeline.
 */
export const pipelineVersions = pgTable(
  "pipeline_versions",
  {
    pipelineId: text("pipeline_id")
      .notNull()
      .references(() => pipelines.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    /** created | updated | schemaUpdated | migrated */
    reason: text("reason").notNull(),
    changes: json("changes").$type<VersionChanges>().notNull(),
    mappings: json("mappings").$type<PipelineMappings>().notNull(),
    schemaId: text("schema_id").notNull(),
    schemaUpdatedAt: time("schema_updated_at").notNull(),
    schemaDefinition: json("schema_definition").$type<Record<string, unknown>>().notNull(),
    /** Who made the change, as the audit log names them; null for versions made by the service (the migration). */
    createdBy: json("created_by").$type<VersionActor>(),
    requestId: text("request_id"),
    createdAt: time("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.pipelineId, t.version] }), index("pipeline_versions_workspace_idx").on(t.workspaceId)],
);
