/**
 * How long closing a postgres.js client (`sql.end({ timeout })`) waits for
 * the queries it still runs before it ends its connections anyway. Short:
 * the service closes its clients last, once nothing of its own runs, and a
 * connection whose socket failed during a query keeps that query as its
 * current one (porsager/postgres#1130, #1097; fix proposed in #1142), so
 * `end()` always waits the full timeout for it. With the library's 5 s, a
 * shutdown after a database fault took 5 s longer per client.
 */
export const PG_CLOSE_TIMEOUT_SECONDS = 1;
