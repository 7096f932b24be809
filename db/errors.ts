function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  let cur: unknown = e;
  for (let i = 0; cur && i < 5; i++) {
    out.push(cur);
    cur = (cur as { cause?: unknown }).cause;
  }
  return out;
}

/** Connection-level failures: postgres.js's own codes, socket errors, Postgres's class 08 and shutdown codes. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
]);

/**
 * Whether `e` says the database cannot be reached, rather than that a query
 * was wrong: a refused, reset or timed-out Postgres connection, or a SQLite
 * file locked by another connection past its busy timeout. Transports answer
 * these 503 with Retry-After (src/services/shared/unavailable.ts).
 */
export function isDatabaseUnavailable(e: unknown): boolean {
  for (const c of causes(e)) {
    const code = (c as { code?: unknown }).code;
    if (typeof code !== "string") continue;
    if (CONNECTION_CODES.has(code) || code.startsWith("08")) return true;
    if (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_") || code === "SQLITE_LOCKED") return true;
  }
  return false;
}

/** The name of the violated unique constraint, or null when `e` is not a unique violation. */
export function uniqueViolation(e: unknown): string | null {
  for (const c of causes(e)) {
    const err = c as { code?: string; constraint_name?: string; message?: string };
    if (err.code === "23505") return err.constraint_name ?? "unique";
    if (err.code === "SQLITE_CONSTRAINT_UNIQUE" || err.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
      return err.message?.replace(/^UNIQUE constraint failed: /, "") ?? "unique";
    }
  }
  return null;
}
