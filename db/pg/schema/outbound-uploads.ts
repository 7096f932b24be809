import { bigint, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { time, timestamps } from "./columns";
import { workspaces } from "./workspaces";

/**
 * Outbound upload sessions (docs/decisions/outbound.md): a client names a
 * connection and an outbound pipeline, sends `totalParts` parts of JSON rows,
 * then completes the session, which combines the parts into one file and
 * starts the run. `connection_id` and `pipeline_id` carry no foreign key: a
 * session, like a run, outlives them; the names at creation are kept.
 */
export const outboundUploads = pgTable(
  "outbound_uploads",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    connectionId: text("connection_id").notNull(),
    connectionName: text("connection_name").notNull(),
    pipelineId: text("pipeline_id").notNull(),
    pipelineName: text("pipeline_name").notNull(),
    /** initiated | completed | failed | expired */
    status: text("status").notNull(),
    totalParts: integer("total_parts").notNull(),
    /** Name of the combined file (the run's filename). */
    filename: text("filename").notNull(),
    /** Exact name the processed file is delivered under. */
    outputFilename: text("output_filename").notNull(),
    /** csv | json | xml */
    outputFormat: text("output_format").notNull(),
    runId: text("run_id"),
    errorMessage: text("error_message"),
    expiresAt: time("expires_at").notNull(),
    /** When the session left `initiated`. */
    endedAt: time("ended_at"),
    ...timestamps,
  },
  (t) => [
    index("outbound_uploads_status_expires_idx").on(t.status, t.expiresAt),
    index("outbound_uploads_workspace_created_idx").on(t.workspaceId, t.createdAt),
  ],
);

/** One received part of a session: its rows are the object `ws/<ws>/outbound-uploads/<uploadId>/part-<n>.json`. */
export const outboundUploadParts = pgTable(
  "outbound_upload_parts",
  {
    uploadId: text("upload_id")
      .notNull()
      .references(() => outboundUploads.id, { onDelete: "cascade" }),
    partNumber: integer("part_number").notNull(),
    rowCount: integer("row_count").notNull(),
    /** Bytes of the stored rows (as combined, not as sent). */
    size: bigint("size", { mode: "number" }).notNull(),
    etag: text("etag").notNull(),
    receivedAt: time("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.uploadId, t.partNumber] })],
);
