import { Database as BunSqlite } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { Column, fillPlaceholders, getTableName, is, SQL, sql, Table } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/bun-sqlite";
import { migrate as migrateSqlite } from "drizzle-orm/bun-sqlite/migrator";
import { drizzle as drizzlePg, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { migrate as migratePg } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import * as pgSchema from "./pg/schema";
import { READ_CACHE_TOPIC, type ReadCache, ReadCaches, type ReadCacheSpec, SIGNALS_CHANNEL } from "./read-cache";
import * as sqliteSchema from "./sqlite/schema";
import { guardTypeFetch } from "./pg-type-fetch";

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
 */
export type Tables = typeof pgSchema;
type PgDb = PostgresJsDatabase<Tables>;
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

/** Records the tables a transaction writes to; reads and raw SQL pass straight through. */
function recording(w: Writer, touched: Set<unknown>): Writer {
  return {
    select: w.select.bind(w),
    selectDistinct: w.selectDistinct.bind(w),
    $count: w.$count.bind(w),
    execute: w.execute?.bind(w),
    insert: ((table: never) => {
      touched.add(table);
      return w.insert(table);
    }) as Writer["insert"],
    update: ((table: never) => {
      touched.add(table);
      return w.update(table);
    }) as Writer["update"],
    delete: ((table: never) => {
      touched.add(table);
      return w.delete(table);
    }) as Writer["delete"],
  };
}

function commitListeners() {
  const listeners = new Set<CommitListener>();
  return {
    on(listener: CommitListener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    /** A listener's failure is not the transaction's: it has committed. */
    emit(tables: Set<unknown>) {
      if (tables.size === 0) return;
      for (const l of listeners) {
        try {
          l(tables);
        } catch (e) {
          console.error("db: a commit listener failed", e);
        }
      }
    },
  };
}

type Row = Record<string, unknown>;
/** What Drizzle's prepared queries hold (internal to Drizzle; read only if it is there, else the public `execute`). */
interface PreparedInternals {
  fields?: { path: string[]; field: unknown }[];
  joinsNotNullableMap?: Record<string, boolean>;
  customResultMapper?: unknown;
}

/**
 * The rows of a prepared select as objects, mapped by a function built once
 * for its columns (Drizzle's own mapping walks each column's path and type
 * checks on every row: a few microseconds a statement on the hot reads).
 * Null when the query is not a plain select this can map exactly as Drizzle
 * does: no nullable join, no custom mapper.
 */
function rowMapper(q: PreparedInternals): ((values: unknown[]) => Row) | null {
  if (!q.fields || q.customResultMapper) return null;
  if (q.joinsNotNullableMap && Object.values(q.joinsNotNullableMap).some((notNull) => !notNull)) return null;
  const columns = q.fields.map(({ path, field }) => {
    // Drizzle keeps an SQL field's decoder (from mapWith) on `decoder`; it is not in its typings.
    const decoder: { mapFromDriverValue(v: unknown): unknown } | null = is(field, Column)
      ? field
      : is(field, SQL)
        ? (field as unknown as { decoder: { mapFromDriverValue(v: unknown): unknown } }).decoder
        : null;
    return { path, decoder };
  });
  if (columns.some((c) => c.decoder === null || c.path.length > 2)) return null;
  return (values) => {
    const out: Row = {};
    for (let i = 0; i < columns.length; i++) {
      const { path, decoder } = columns[i]!;
      const raw = values[i];
      const value = raw === null ? null : decoder!.mapFromDriverValue(raw);
      if (path.length === 1) out[path[0]!] = value;
      else ((out[path[0]!] ??= {}) as Row)[path[1]!] = value;
    }
    return out;
  };
}

function preparedReads(prepare: (q: Preparable, name: string) => (values?: Record<string, unknown>) => unknown, read: Reader) {
  const cache = new Map<string, (values?: Record<string, unknown>) => unknown>();
  return <Q extends Preparable>(name: string, build: (r: Reader) => Q): PreparedRead<Q> => {
    let run = cache.get(name);
    if (!run) {
      run = prepare(build(read), name);
      cache.set(name, run);
    }
    return run as PreparedRead<Q>;
  };
}

const MIGRATIONS = {
  sqlite: join(import.meta.dir, "sqlite", "migrations"),
  pg: join(import.meta.dir, "pg", "migrations"),
};

export function openSqlite(path: string): Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const client = new BunSqlite(path, { create: true, strict: true });
  client.exec("PRAGMA journal_mode = WAL");
  // FULL: a transaction that returned is on disk, even across a power cut.
  client.exec("PRAGMA synchronous = FULL");
  client.exec("PRAGMA foreign_keys = ON");
  client.exec("PRAGMA busy_timeout = 5000");
  // Drizzle prepares every statement anew; bun:sqlite's query() compiles a SQL text once and keeps it.
  const cached = new Proxy(client, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => target.query(sql);
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const db = drizzleSqlite({ client: cached, schema: sqliteSchema });
  migrateSqlite(db, { migrationsFolder: MIGRATIONS.sqlite });
  const handle = db as unknown as PgDb;
  const commits = commitListeners();
  const dataVersion = client.query<{ data_version: number }, []>("PRAGMA data_version");
  const externalVersion = () => dataVersion.get()!.data_version;
  let lock: Promise<void> = Promise.resolve();
  let inTransaction = false;
  const caches = new ReadCaches(cascadesInto(client), {
    inTransaction: () => inTransaction,
    externalVersion,
    ttlMs: Number.POSITIVE_INFINITY,
  });
  return {
    dialect: "sqlite",
    t: sqliteSchema as unknown as Tables,
    read: handle,
    async tx(fn, opts) {
      const previous = lock;
      let release!: () => void;
      lock = new Promise<void>((r) => (release = r));
      await previous;
      const touched = new Set<unknown>();
      try {
        client.exec("BEGIN IMMEDIATE");
        inTransaction = true;
        caches.began();
        let result: Awaited<ReturnType<typeof fn>>;
        try {
          result = await fn(recording(handle, touched));
          client.exec("COMMIT");
        } catch (e) {
          client.exec("ROLLBACK");
          throw e;
        } finally {
          inTransaction = false;
        }
        // Read caches first, quiet or not: the caller's next read must see this commit.
        caches.committed([...touched].map((t) => getTableName(t as Table)));
        if (!opts?.quiet) commits.emit(touched);
        return result;
      } finally {
        release();
      }
    },
    // bun:sqlite runs a prepared select synchronously: straight to the statement, then the row mapper.
    prepared: preparedReads((q, name) => {
      const p = q.prepare(name) as unknown as PreparedInternals & {
        all(values?: Record<string, unknown>): unknown;
        query?: { params: unknown[] };
        stmt?: { values(...params: unknown[]): unknown[][] };
      };
      const map = rowMapper(p);
      if (!map || !p.query || !p.stmt) return (values) => Promise.resolve(p.all(values));
      const { query, stmt } = p;
      return (values) => Promise.resolve(stmt.values(...fillPlaceholders(query.params, values ?? {})).map(map));
    }, handle),
    onCommit: commits.on,
    externalVersion,
    readCache: (spec) => caches.cache(spec),
    clearReadCaches: () => caches.clearAll(),
    // A read that must see the file: a database another connection holds locked past busy_timeout fails it.
    ping: async () => void client.query("select count(*) from sqlite_master").get(),
    async close() {
      await lock;
      client.close();
    },
  };
}

/**
 * For each table, itself and every table whose deletes reach it through
 * foreign keys that cascade (or set null or a default): a cache of reads of
 * `pipelines` must also be cleared when a workspace is deleted.
 */
function cascadesInto(client: BunSqlite): (table: string) => ReadonlySet<string> {
  const tables = client.query<{ name: string }, []>("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'").all();
  const parents = new Map<string, string[]>();
  for (const { name } of tables) {
    const keys = client.query<{ table: string; on_delete: string }, []>(`select "table", on_delete from pragma_foreign_key_list('${name.replaceAll("'", "''")}')`).all();
    parents.set(
      name,
      keys.filter((k) => k.on_delete !== "NO ACTION" && k.on_delete !== "RESTRICT").map((k) => k.table),
    );
  }
  return closure(parents);
}

/** As `cascadesInto`, from Postgres's catalog. */
async function pgCascadesInto(client: postgres.Sql): Promise<(table: string) => ReadonlySet<string>> {
  const keys = await client<{ child: string; parent: string }[]>`
    select c.relname as child, p.relname as parent
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_class p on p.oid = k.confrelid
    join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and k.confdeltype in ('c', 'n', 'd') and n.nspname = current_schema()`;
  const parents = new Map<string, string[]>();
  for (const k of keys) parents.set(k.child, [...(parents.get(k.child) ?? []), k.parent]);
  return closure(parents);
}

/** For each table, itself and its parents' closure. */
function closure(parents: ReadonlyMap<string, readonly string[]>): (table: string) => ReadonlySet<string> {
  return (table) => {
    const out = new Set<string>();
    const visit = (t: string) => {
      if (out.has(t)) return;
      out.add(t);
      for (const p of parents.get(t) ?? []) visit(p);
    };
    visit(table);
    return out;
  };
}

export interface PgOptions {
  max?: number;
  /** READ_CACHE_TTL_MS: how long a cached read may live (0: no read cache). Default 1000. */
  readCacheTtlMs?: number;
}

export async function openPostgres(url: string, opts: PgOptions = {}): Promise<Database> {
  guardTypeFetch();
  // A connection not made in 5 s fails (postgres.js waits 30 s by default): an outage answers 503 soon, not a hang.
  // Reconnects are tried again within 1 s (postgres.js backs off up to 20 s, and queries wait for the next attempt).
  const client = postgres(url, { max: opts.max ?? 10, connect_timeout: 5, backoff: (n) => Math.min(0.1 * 2 ** n, 1), onnotice: () => {} });
  const db = drizzlePg({ client, schema: pgSchema });
  // Several instances may start at once: one migrates, the others wait.
  const lock = await client.reserve();
  try {
    await lock`select pg_advisory_lock(7413290211)`;
    await migratePg(db, { migrationsFolder: MIGRATIONS.pg });
  } finally {
    await lock`select pg_advisory_unlock(7413290211)`;
    lock.release();
  }
  const commits = commitListeners();
  const caches = new ReadCaches(await pgCascadesInto(client), { inTransaction: () => false, ttlMs: opts.readCacheTtlMs ?? 1000 });
  // Sent in the writing transaction: the other instances hear of it with the commit, never before, and always.
  const signal = sql`select pg_notify(${SIGNALS_CHANNEL}, ${JSON.stringify({ origin: "db", topic: READ_CACHE_TOPIC })})`;
  return {
    dialect: "pg",
    url,
    t: pgSchema,
    read: db,
    async tx(fn, opts) {
      const touched = new Set<unknown>();
      let written: string[] = [];
      const result = await db.transaction(async (tx) => {
        const r = await fn(recording(tx, touched));
        written = [...touched].map((t) => getTableName(t as Table));
        if (caches.affects(written)) await tx.execute(signal);
        return r;
      });
      caches.committed(written);
      if (!opts?.quiet) commits.emit(touched);
      return result;
    },
    // A named, server-side prepared statement through postgres.js, then the row mapper.
    prepared: preparedReads((q, name) => {
      const p = q.prepare(name) as ReturnType<Preparable["prepare"]> &
        PreparedInternals & { queryString?: string; params?: unknown[]; client?: postgres.Sql };
      const map = rowMapper(p);
      if (!map || p.queryString === undefined || !p.params || !p.client) return (values) => p.execute(values);
      const { queryString, params, client } = p;
      return async (values) =>
        (await client.unsafe(queryString, fillPlaceholders(params, values ?? {}) as postgres.ParameterOrJSON<never>[], { prepare: true }).values()).map(
          map as (v: unknown) => Row,
        );
    }, db),
    onCommit: commits.on,
    readCache: (spec) => caches.cache(spec),
    clearReadCaches: () => caches.clearAll(),
    ping: async () => void (await client`select 1`),
    close: () => client.end({ timeout: 5 }),
  };
}

export async function openDatabase(
  cfg: { kind: "sqlite"; path: string } | { kind: "pg"; url: string },
  opts: Pick<PgOptions, "readCacheTtlMs"> = {},
): Promise<Database> {
  return cfg.kind === "sqlite" ? openSqlite(cfg.path) : openPostgres(cfg.url, opts);
}

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
