import { join } from "node:path";
import { fillPlaceholders, getTableName, sql, type Table } from "drizzle-orm";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import { migrate as migratePg } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import type { Database, Preparable } from "./client";
import { PG_CLOSE_TIMEOUT_SECONDS } from "./pg-close";
import { commitListeners, pgCascadesInto, recording } from "./commits";
import { checkPatchedPostgres } from "./pg-library";
import { DEFAULT_SILENCE_MS, silenceBound } from "./pg-silence";
import { guardTypeFetch } from "./pg-type-fetch";
import { type PreparedInternals, preparedReads, type Row, rowMapper } from "./prepared";
import * as pgSchema from "./pg/schema";
import { READ_CACHE_TOPIC, ReadCaches, SIGNALS_CHANNEL } from "./read-cache";

export interface PgOptions {
  max?: number;
  /** READ_CACHE_TTL_MS: how long a cached read may live (0: no read cache). Default 1000. */
  readCacheTtlMs?: number;
  /** DATABASE_STALL_TIMEOUT_SECONDS in ms: a query whose connection carries nothing back for this long fails (0: never). Default 5000. */
  silenceMs?: number;
}

export async function openPostgres(url: string, opts: PgOptions = {}): Promise<Database> {
  checkPatchedPostgres();
  // A connection not made in 5 s fails (postgres.js waits 30 s by default): an outage answers 503 soon, not a hang.
  // Reconnects are tried again within 1 s (postgres.js backs off up to 20 s, and queries wait for the next attempt).
  // A query whose connection goes silent fails after silenceMs (db/pg-silence.ts): a stalled network answers 503 soon too.
  const silenceMs = opts.silenceMs ?? DEFAULT_SILENCE_MS;
  const client = postgres(url, {
    max: opts.max ?? 10,
    connect_timeout: 5,
    backoff: (n: number) => Math.min(0.1 * 2 ** n, 1),
    onnotice: () => {},
    ...(silenceMs > 0 ? { socket: silenceBound(silenceMs) } : {}),
  } as postgres.Options<{}>);
  // Before any connection is opened: postgres.js's own type query must not fail unhandled.
  guardTypeFetch(client);
  const db = drizzlePg({ client, schema: pgSchema });
  await migrate(url);
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
    close: () => client.end({ timeout: PG_CLOSE_TIMEOUT_SECONDS }),
  };
}

/**
 * Migrates on a client of its own, one connection without the silence bound:
 * several instances may start at once, one migrates and the others wait for
 * its lock, which can take longer than any bound on a query.
 */
async function migrate(url: string): Promise<void> {
  const client = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await client`select pg_advisory_lock(7413290211)`;
    try {
      await migratePg(drizzlePg({ client, schema: pgSchema }), { migrationsFolder: join(import.meta.dir, "pg", "migrations") });
    } finally {
      await client`select pg_advisory_unlock(7413290211)`;
    }
  } finally {
    await client.end({ timeout: PG_CLOSE_TIMEOUT_SECONDS });
  }
}
