/**
 * postgres.js (3.4.x) runs a catalog query for array types as the first
 * statement of every new connection (`fetch_types`), and drops the promise of
 * that query (`fetchArrayTypes()` in ReadyForQuery). When the connection is
 * reset, terminated or cancelled while that query runs, the rejection has no
 * handler and the process exits (porsager/postgres#1192, #1205, #1223; found
 * here by resetting connections through a proxy). The query that opened the
 * connection gets the same failure on its own and reports it, so this one
 * rejection is dropped; every other unhandled rejection still ends the process.
 *
 * `fetch_types: false` would avoid the query, but it breaks array parameters
 * and makes `reserve()` wait for ever (porsager/postgres#1219).
 */
const TYPE_FETCH = /from pg_catalog\.pg_type a\s+left join pg_catalog\.pg_type b on b\.oid = a\.typelem/;

let installed = false;

/** Whether `reason` is the rejection of postgres.js's own array-type query (it carries the query's text). */
export function isTypeFetchFailure(reason: unknown): boolean {
  const query = (reason as { query?: unknown } | null)?.query;
  return typeof query === "string" && TYPE_FETCH.test(query);
}

/** Installs, once per process, the handler that drops the type query's rejection and rethrows every other. */
export function guardTypeFetch(): void {
  if (installed) return;
  installed = true;
  process.on("unhandledRejection", (reason) => {
    if (isTypeFetchFailure(reason)) return;
    // Another handler decides; alone, this one keeps the runtime's default (the process ends).
    if (process.listenerCount("unhandledRejection") > 1) return;
    throw reason;
  });
}
