import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Rate-limit counters shared by all instances on Postgres: one row per
 * budget subject (`requests:key_...`, `bytes:key_...`, `auth:<address>`)
 * and fixed window. The embedded default counts in process and leaves this
 * table empty; it exists so both dialects keep one schema.
 */
export const rateLimitWindows = sqliteTable(
  "rate_limit_windows",
  {
    subject: text("subject").notNull(),
    /** Start of the window, in ms since the epoch. */
    windowStart: integer("window_start").notNull(),
    used: integer("used").notNull(),
  },
  (t) => [primaryKey({ columns: [t.subject, t.windowStart] })],
);
