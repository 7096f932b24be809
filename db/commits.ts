import type { Database as BunSqlite } from "bun:sqlite";
import type postgres from "postgres";
import type { CommitListener, Writer } from "./client";

/** Records the tables a transaction writes to; reads and raw SQL pass straight through. */
export function recording(w: Writer, touched: Set<unknown>): Writer {
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

export function commitListeners() {
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

/**
 * For each table, itself and every table whose deletes reach it through
 * foreign keys that cascade (or set null or a default): a cache of reads of
 * `pipelines` must also be cleared when a workspace is deleted.
 */
export function cascadesInto(client: BunSqlite): (table: string) => ReadonlySet<string> {
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
export async function pgCascadesInto(client: postgres.Sql): Promise<(table: string) => ReadonlySet<string>> {
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

