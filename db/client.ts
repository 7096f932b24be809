import { Database as BunSqlite } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { drizzle as drizzleSqlite } from "drizzle-orm/bun-sqlite";
import { migrate as migrateSqlite } from "drizzle-orm/bun-sqlite/migrator";
import { drizzle as drizzlePg, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { migrate as migratePg } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import * as pgSchema from "./pg/schema";
import * as sqliteSchema from "./sqlite/schema";

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

export interface Database {
  readonly dialect: Dialect;
  /** Postgres: the connection URL, for what needs a connection of its own (LISTEN/NOTIFY, the job queue). */
  readonly url?: string;
  readonly t: Tables;
  readonly read: Reader;
  tx<T>(fn: (w: Writer) => Promise<T>): Promise<T>;
  close(): Promise<void>;
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
  let lock: Promise<void> = Promise.resolve();
  return {
    dialect: "sqlite",
    t: sqliteSchema as unknown as Tables,
    read: handle,
    async tx(fn) {
      const previous = lock;
      let release!: () => void;
      lock = new Promise<void>((r) => (release = r));
      await previous;
      try {
        client.exec("BEGIN IMMEDIATE");
        try {
          const result = await fn(handle);
          client.exec("COMMIT");
          return result;
        } catch (e) {
          client.exec("ROLLBACK");
          throw e;
        }
      } finally {
        release();
      }
    },
    async close() {
      await lock;
      client.close();
    },
  };
}

export interface PgOptions {
  max?: number;
}

export async function openPostgres(url: string, opts: PgOptions = {}): Promise<Database> {
  const client = postgres(url, { max: opts.max ?? 10, onnotice: () => {} });
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
  return {
    dialect: "pg",
    url,
    t: pgSchema,
    read: db,
    tx: (fn) => db.transaction((tx) => fn(tx)),
    close: () => client.end({ timeout: 5 }),
  };
}

export async function openDatabase(
  cfg: { kind: "sqlite"; path: string } | { kind: "pg"; url: string },
): Promise<Database> {
  return cfg.kind === "sqlite" ? openSqlite(cfg.path) : openPostgres(cfg.url);
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
