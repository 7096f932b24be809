import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { type Database, openPostgres, openSqlite } from "../../db/client";

/**
 * A fresh, migrated database for one test file: a new SQLite file, or, when
 * TEST_DATABASE_URL points at a Postgres server, a new database on it that
 * is dropped afterwards.
 */
export interface TestDatabase {
  db: Database;
  url: string | null;
  drop(): Promise<void>;
}

export const testDialect = (): "pg" | "sqlite" => (process.env.TEST_DATABASE_URL ? "pg" : "sqlite");

/** `dataDir`: where the SQLite file goes, as `service.db`, the name the service itself uses there. */
/** `via`: the URL the service uses instead of the database's own (Postgres only; a fault proxy, test/helpers/tcp-proxy.ts). */
export async function freshDatabase(dataDir?: string, opts: { via?: (url: string) => string } = {}): Promise<TestDatabase> {
  const admin = process.env.TEST_DATABASE_URL;
  if (!admin) {
    const dir = dataDir ?? mkdtempSync(join(tmpdir(), "fps-test-"));
    const db = openSqlite(join(dir, "service.db"));
    return {
      db,
      url: null,
      async drop() {
        await db.close();
        if (!dataDir) rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `fps_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database ${name}`);
  await sql.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const serviceUrl = opts.via ? opts.via(url.toString()) : url.toString();
  const db = await openPostgres(serviceUrl, { max: 4 });
  return {
    db,
    url: serviceUrl,
    async drop() {
      await db.close();
      const s = postgres(admin, { max: 1, onnotice: () => {} });
      await s.unsafe(`drop database if exists ${name} with (force)`);
      await s.end();
    },
  };
}
