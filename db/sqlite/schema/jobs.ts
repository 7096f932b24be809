import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { time, timestamps } from "./columns";

/**
 * The durable job queue of the embedded default (one process, SQLite). On
 * Postgres the queue library keeps its own tables instead, so this table
 * exists on SQLite only (test/db.schema-parity.test.ts names it).
 */
export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    payload: text("payload", { mode: "json" }).$type<unknown>().notNull(),
    /** De-duplication: while a job with this key waits or runs, adding another with the key is a no-op. */
    jobKey: text("job_key"),
    /** pending | running | failed (completed jobs are deleted) | cron: a schedule's row, `run_at` its last fired slot (src/jobs/sqlite-queue.ts) */
    status: text("status").notNull(),
    attempts: integer("attempts").notNull(),
    maxAttempts: integer("max_attempts").notNull(),
    runAt: time("run_at").notNull(),
    /** The lease: who holds the job and until when; an expired lease is claimed again. */
    lockedBy: text("locked_by"),
    lockedUntil: time("locked_until"),
    lastError: text("last_error"),
    ...timestamps,
  },
  (t) => [index("jobs_ready_idx").on(t.status, t.runAt), uniqueIndex("jobs_key_uq").on(t.jobKey)],
);
