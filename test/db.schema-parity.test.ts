import { expect, test } from "bun:test";
import { getTableConfig as pgConfig, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as pg from "../db/pg/schema";
import * as sqlite from "../db/sqlite/schema";

/**
 * The two dialect schemas are written twice (drizzle 0.45 cannot share table
 * objects), so this test holds them to one shape: same tables, same columns
 * with the same JS types and nullability, same keys, indexes and references.
 */
function describeTable(c: ReturnType<typeof pgConfig> | ReturnType<typeof sqliteConfig>) {
  return {
    name: c.name,
    columns: c.columns
      .map((col) => ({ name: col.name, dataType: col.dataType, notNull: col.notNull, primary: col.primary, unique: col.isUnique }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    primaryKeys: c.primaryKeys.map((pk) => pk.columns.map((col) => col.name)),
    indexes: c.indexes
      .map((i) => ({ name: i.config.name, unique: i.config.unique, columns: i.config.columns.map((col) => ("name" in col ? col.name : "expr")) }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name))),
    foreignKeys: c.foreignKeys
      .map((fk) => {
        const r = fk.reference();
        return { columns: r.columns.map((col) => col.name), onDelete: fk.onDelete };
      })
      .sort((a, b) => a.columns.join().localeCompare(b.columns.join())),
  };
}

/** The embedded default's job queue lives in a table; on Postgres the queue library keeps its own (docs/decisions/jobs.md). */
const SQLITE_ONLY = new Set(["jobs"]);

test("the SQLite and Postgres schemas describe the same tables", () => {
  const pgTables = (Object.values(pg) as unknown[]).filter((t): t is PgTable => t instanceof PgTable);
  const sqliteTables = (Object.values(sqlite) as unknown[]).filter(
    (t): t is SQLiteTable => t instanceof SQLiteTable && !SQLITE_ONLY.has(sqliteConfig(t).name),
  );
  expect(pgTables.length).toBeGreaterThan(5);
  const a = pgTables.map((t) => describeTable(pgConfig(t))).sort((x, y) => x.name.localeCompare(y.name));
  const b = sqliteTables.map((t) => describeTable(sqliteConfig(t))).sort((x, y) => x.name.localeCompare(y.name));
  expect(b).toEqual(a);
});

test("the generated migrations of both dialects are committed and cover every table", async () => {
  for (const dialect of ["pg", "sqlite"] as const) {
    const journal = await Bun.file(`${import.meta.dir}/../db/${dialect}/migrations/meta/_journal.json`).json();
    const sql = (
      await Promise.all(
        journal.entries.map((e: { tag: string }) => Bun.file(`${import.meta.dir}/../db/${dialect}/migrations/${e.tag}.sql`).text()),
      )
    ).join("\n");
    const tables = dialect === "pg" ? Object.values(pg).filter((t) => t instanceof PgTable) : Object.values(sqlite).filter((t) => t instanceof SQLiteTable);
    for (const t of tables) {
      const name = dialect === "pg" ? pgConfig(t as PgTable).name : sqliteConfig(t as SQLiteTable).name;
      expect(sql).toContain(`CREATE TABLE \`${name}\``.replace(/`/g, dialect === "pg" ? '"' : "`"));
    }
  }
});
