import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { openPostgres, type PgOptions } from "./open-postgres";
import { openSqlite } from "./open-sqlite";
import type * as pgSchema from "./pg/schema";
import type { ReadCache, ReadCacheSpec } from "./read-cache";

export { isDatabaseUnavailable, uniqueViolation } from "./errors";
export { openPostgres, type PgOptions } from "./open-postgres";
export { openSqlite } from "./open-sqlite";

/**
 * The database as services see it. Both dialects are driven through the
 * same awaitable Drizzle query-builder calls; services are typed against the
 * Postgres tables, and at run time SQLite gets its own table objects, which
 * build the same queries (db/schema-parity.test.ts keeps the two schemas
 * identical).
 *
 * Writes go through `tx()`. Drizzle's bun-sqlite transactions are
 * synchronous, so an `await` inside one would commit early; `tx()` instead
 * serialises SQLite transactions behind one async lock on the single
 * connection, and uses a real transaction on Postgres. `read` cannot write,
 * so no write can slip into another request's open SQLite transaction.
 *
 * The openers: ./open-sqlite.ts and ./open-postgres.ts. ./commits.ts
 * records the tables a transaction wrote and which tables deletes cascade
 * into (read caches are cleared by both); ./prepared.ts builds the prepared
 * reads; ./errors.ts tells an unreachable database from a wrong query.
 */
export type Tables = typeof pgSchema;
export type PgDb = PostgresJsDatabase<Tables>;
/**
 * `execute` (raw SQL in the transaction) exists on Postgres only; the job
 * queue uses it there to enqueue through graphile-worker's add_job in the
 * caller's transaction. SQLite's handle has none.
 */
export type Writer = Pick<PgDb, "select" | "selectDistinct" | "insert" | "update" | "delete" | "$count" | "execute">;
export type Reader = Pick<PgDb, "select" | "selectDistinct" | "$count">;
export type Dialect = "sqlite" | "pg";

/** A query builder Drizzle can prepare (a select with `sql.placeholder(...)` for its values). */
export interface Preparable {
  prepare(name: string): { execute(values?: Record<string, unknown>): Promise<unknown> };
}
/** A prepared read: the rows for these placeholder values. */
export type PreparedRead<Q extends Preparable> = (values?: Record<string, unknown>) => ReturnType<ReturnType<Q["prepare"]>["execute"]>;
/** The tables a committed transaction wrote to (the table objects of `t`). */
export type CommitListener = (tables: ReadonlySet<unknown>) => void;

export interface Database {
  readonly dialect: Dialect;
  /** Postgres: the connection URL, for what needs a connection of its own (LISTEN/NOTIFY, the job queue). */
  readonly url?: string;
  readonly t: Tables;
  readonly read: Reader;
  /** `quiet`: commit listeners are not told (a write of a hint no cache depends on, like a key's lastUsedAt). */
  tx<T>(fn: (w: Writer) => Promise<T>, opts?: { quiet?: boolean }): Promise<T>;
  /**
   * A read built once for this database and run with new values each time.
   * Drizzle otherwise builds the SQL text anew on every call, which costs
   * more than a small query itself (docs/decisions/hot-path.md); the hot
   * reads use this. `name` is unique per query shape; `build` uses
   * `sql.placeholder(...)` for every value.
   */
  prepared<Q extends Preparable>(name: string, build: (r: Reader) => Q): PreparedRead<Q>;
  /**
   * Called after each committed `tx()` that inserted, updated or deleted
   * rows, with the tables it wrote to (caches of this process use it).
   * Answers the unsubscribe function.
   */
  onCommit(listener: CommitListener): () => void;
  /**
   * SQLite: a number that changes when another connection (another process:
   * the admin CLI) commits to the file; this process's own commits leave it
   * as it is. Postgres has none (instances tell each other by NOTIFY).
   */
  externalVersion?(): number;
  /**
   * The read cache `spec` declares (its name and the tables, by SQL name,
   * its reads touch), cleared by every commit that could change what it
   * holds (db/read-cache.ts). Only reads outside `tx()` may use it.
   */
  readCache<V>(spec: ReadCacheSpec<V>): ReadCache<V>;
  /** Another instance signalled a write to cached tables (or its signals may have been missed): every read cache is cleared. */
  clearReadCaches(): void;
  /** One round trip to the database (readiness): resolves when it answers, throws when it cannot. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export async function openDatabase(
  cfg: { kind: "sqlite"; path: string } | { kind: "pg"; url: string },
  opts: Pick<PgOptions, "readCacheTtlMs" | "silenceMs"> = {},
): Promise<Database> {
  return cfg.kind === "sqlite" ? openSqlite(cfg.path) : openPostgres(cfg.url, opts);
}

