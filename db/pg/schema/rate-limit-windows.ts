import { bigint, pgTable, primaryKey, text } from "drizzle-orm/pg-core";

/**
 * Rate-limit counters shared by all instances on Postgres: one row per
 * budget subject (`requests:key_...`, `bytes:key_...`, `auth:<address>`)
 * and fixed window. Instances add their local counts in batches
 * (src/services/rate-limits/limiter.ts); old windows are deleted as they go.
 */
export const rateLimitWindows = pgTable(
  "rate_limit_windows",
  {
    subject: text("subject").notNull(),
    /** Start of the window, in ms since the epoch. */
    windowStart: bigint("window_start", { mode: "number" }).notNull(),
    used: bigint("used", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.subject, t.windowStart] })],
);
