import { bigint, index, integer, json, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import type { RunMetadata } from "../../../src/domain/runs";
import { time, timestamps } from "./columns";
import { workspaces } from "./workspaces";

/**
 * One processing of one file by one pipeline. `pipeline_id` and
 * `connection_id` carry no foreign key on purpose: runs outlive their
 * pipeline (reported as `DELETED PIPELINE`), and the names at the time of the
 * run are kept beside the ids for that case.
 */
export const pipelineRuns = pgTable(
  "pipeline_runs",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    pipelineId: text("pipeline_id").notNull(),
    pipelineName: text("pipeline_name").notNull(),
    connectionId: text("connection_id").notNull(),
    connectionName: text("connection_name").notNull(),
    schemaId: text("schema_id").notNull(),
    direction: text("direction").notNull(),
    status: text("status").notNull(),
    /** How the file arrived: upload, sftp, email, outbound. */
    source: text("source").notNull(),
    filename: text("filename").notNull(),
    path: text("path").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    mimetype: text("mimetype").notNull(),
    /** Object-store keys of the original, the processed file and the rejects file. */
    originalKey: text("original_key").notNull(),
    processedKey: text("processed_key"),
    rejectsKey: text("rejects_key"),
    metadata: json("metadata").$type<RunMetadata>().notNull(),
    errorMessage: text("error_message"),
    /** Processing attempts so far (a retry adds one). */
    attempt: integer("attempt").notNull(),
    /** The pipeline version that processed the run (pipeline_versions); null until it is processed, unless a reprocess named one, and for runs from before versions. */
    pipelineVersion: integer("pipeline_version"),
    /** The run this one reprocesses (POST /pipeline-runs/{id}/reprocess): the same original file, a new run. */
    reprocessOf: text("reprocess_of"),
    /** Set by a transport that must not start the same file twice (e.g. an SFTP path and its mtime). */
    idempotencyKey: text("idempotency_key"),
    processedAt: time("processed_at"),
    ...timestamps,
  },
  (t) => [
    index("pipeline_runs_workspace_created_idx").on(t.workspaceId, t.createdAt),
    index("pipeline_runs_pipeline_created_idx").on(t.pipelineId, t.createdAt),
    index("pipeline_runs_workspace_status_idx").on(t.workspaceId, t.status),
    uniqueIndex("pipeline_runs_idempotency_uq").on(t.workspaceId, t.idempotencyKey),
  ],
);
