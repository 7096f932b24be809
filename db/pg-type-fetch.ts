import type postgres from "postgres";

/**
 * postgres.js (3.4.x) runs a catalog query for array types as the first
 * statement of every new connection (`fetch_types`), awaits it in an async
 * function (`fetchArrayTypes()`) and drops that function's promise
 * (`ReadyForQuery`). When the connection is reset, refused on reconnect,
 * terminated or cancelled while that query runs, the promise rejects with no
 * handler: an unhandled rejection, which ends a Bun or Node process and
 * fails a `bun test` file whatever `process.on("unhandledRejection")` says
 * (porsager/postgres#1192, #1205, #1223; found here by resetting connections
 * through a proxy). The query that opened the connection gets the same
 * failure on its own (postgres.js fails it in the same step) and reports it.
 *
 * The guard gives that one await an answer instead: when the type query
 * fails, `fetchArrayTypes()` receives no rows and returns, so its promise
 * resolves. It does so by wrapping `then` of postgres.js's query class (what
 * `await` calls) for that query alone, recognised by its text. A failed
 * fetch leaves the connection as the failure left it (a reset one is
 * reconnected, and a new connection fetches the types again).
 *
 * `fetch_types: false` would avoid the query, but it breaks array parameters
 * and makes `reserve()` wait for ever (porsager/postgres#1219).
 */
const TYPE_FETCH = /from pg_catalog\.pg_type a\s+left join pg_catalog\.pg_type b on b\.oid = a\.typelem/;

/** What the guard reads of a postgres.js query (src/query.js). */
interface QueryShape {
  tagged: boolean;
  strings: readonly string[];
  args: readonly unknown[];
}

const guarded = new WeakSet<object>();

/** Whether `query` is postgres.js's own array-type query (untagged, no parameters, its catalog text). */
export function isTypeFetch(query: QueryShape): boolean {
  return query.tagged === false && query.args?.length === 0 && typeof query.strings?.[0] === "string" && TYPE_FETCH.test(query.strings[0]);
}

/**
 * Installs the guard on the query class of `sql` (one class per process: every
 * postgres.js client is covered once any is passed here). Throws if that
 * class no longer looks as the guard expects, so a library upgrade that
 * changes it fails at start-up rather than silently unguarded.
 */
export function guardTypeFetch(sql: postgres.Sql): void {
  // Queries run only when awaited or executed: this one never is.
  const probe = sql.unsafe("select 1") as unknown as QueryShape & object;
  const proto = Object.getPrototypeOf(probe) as { then: Promise<unknown>["then"] };
  if (guarded.has(proto)) return;
  if (!Object.hasOwn(proto, "then") || probe.tagged !== false || !Array.isArray(probe.strings) || !Array.isArray(probe.args)) {
    throw new Error("postgres.js's query class is not the one db/pg-type-fetch.ts guards (was the library upgraded?)");
  }
  const then = proto.then;
  proto.then = function (this: QueryShape, onFulfilled?: (value: unknown) => unknown, onRejected?: (reason: unknown) => unknown) {
    if (!onFulfilled || !isTypeFetch(this)) return then.call(this, onFulfilled, onRejected);
    return then.call(this, onFulfilled, () => onFulfilled([]));
  } as Promise<unknown>["then"];
  guarded.add(proto);
}
