import { Database as BunSqlite } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fillPlaceholders, getTableName, type Table } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/bun-sqlite";
import { migrate as migrateSqlite } from "drizzle-orm/bun-sqlite/migrator";
import type { Database, PgDb, Tables } from "./client";
import { cascadesInto, commitListeners, recording } from "./commits";
import { type PreparedInternals, preparedReads, rowMapper } from "./prepared";
import { ReadCaches } from "./read-cache";
import * as sqliteSchema from "./sqlite/schema";

/**
 * The embedded database: one file, one connection. Writes are serialised
 * behind one async lock (db/client.ts says why).
 */
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
  migrateSqlite(db, { migrationsFolder: join(import.meta.dir, "sqlite", "migrations") });
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

