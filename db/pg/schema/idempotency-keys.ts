import { integer, json, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { time } from "./columns";

/**
 * `Idempotency-Key` claims, per workspace (docs/decisions/idempotency.md).
 * A request claims its key by inserting the row (`in_progress`) before any
 * work; the first answer is stored when it completes. Rows older than 24 h
 * are deleted by a cron job.
 */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    workspaceId: text("workspace_id").notNull(),
    key: text("key").notNull(),
    /** Method and route of the request, and a digest of what it sent (null until known: an upload's file is hashed as it streams). */
    method: text("method").notNull(),
    path: text("path").notNull(),
    fingerprint: text("fingerprint"),
    /** in_progress | completed */
    state: text("state").notNull(),
    responseStatus: integer("response_status"),
    responseBody: json("response_body").$type<unknown>(),
    createdAt: time("created_at").notNull(),
    completedAt: time("completed_at"),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.key] })],
);
