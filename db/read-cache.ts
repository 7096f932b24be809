/**
 * Rows this process read, kept until a commit could have changed them
 * (docs/decisions/hot-path.md).
 *
 * - Every commit of this process clears what it could have changed before
 *   `tx()` returns: the caller's next read, and anyone's on this instance,
 *   sees the write.
 * - SQLite (the embedded default): the service is the only process that
 *   writes these tables (the admin CLI writes only workspaces and keys), so
 *   the cache answers exactly what the database would.
 * - Postgres: a transaction that writes a table some cache depends on also
 *   sends a NOTIFY (in the transaction, so it goes out with the commit);
 *   every instance clears its caches when it arrives, and after its LISTEN
 *   connection reconnected. An entry lives at most `ttlMs`
 *   (READ_CACHE_TTL_MS) from the moment its read began, which bounds what a
 *   lost notification could leave behind; 0 turns the cache off there.
 *
 * - A cache depends on the tables its reads touch, and on every table a
 *   delete cascades from into them (found from the schema's foreign keys):
 *   deleting a workspace or a webhook clears what showed it.
 * - A read made while a transaction of this connection is open may see that
 *   transaction's uncommitted rows: a load during which a transaction was
 *   open or began is not kept. Nor is one that began before a clear (an
 *   epoch count), so a commit that lands while a caller awaits cannot let
 *   the old rows back in.
 * - A commit by another process (an operator's SQL on the file) shows in
 *   `PRAGMA data_version`, read at most every EXTERNAL_CHECK_MS; a change
 *   clears every cache.
 * - Values are frozen when kept: a caller that changed one would change what
 *   the next request reads, so such a caller fails loudly instead.
 */
export const EXTERNAL_CHECK_MS = 50;
/** Entries a cache keeps unless its declaration says otherwise; the oldest goes first. */
const DEFAULT_MAX_ENTRIES = 1000;
/**
 * And at most this much of their JSON text (a pipeline's mappings may be
 * up to a 1 MB body): what bounds a cache's memory whatever is stored. A
 * value larger than this is not kept.
 */
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
/** The Postgres channel instances tell each other on (src/adapters/events/postgres.ts listens), and the read caches' topic on it. */
export const SIGNALS_CHANNEL = "fps_signals";
export const READ_CACHE_TOPIC = "read-cache";

/**
 * A cache as the code declares it, once, at module level: every instance
 * knows every cache from the start, so a write to a table one of them
 * depends on is signalled even by an instance that has not read through it
 * yet.
 */
export interface ReadCacheSpec<V> {
  readonly name: string;
  readonly tables: readonly string[];
  /** At most this many entries and this many bytes of their JSON text (the oldest goes first). */
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** Type only. */
  readonly __value?: V;
}
const declared = new Map<string, readonly string[]>();

export function readCacheSpec<V>(name: string, tables: readonly string[], opts: { maxEntries?: number; maxBytes?: number } = {}): ReadCacheSpec<V> {
  if (declared.has(name)) throw new Error(`read cache '${name}' is declared twice`);
  declared.set(name, tables);
  return { name, tables, maxEntries: opts.maxEntries ?? DEFAULT_MAX_ENTRIES, maxBytes: opts.maxBytes ?? DEFAULT_MAX_BYTES };
}

/** When a load began: the epoch (-1 inside a transaction) and the time. */
export interface Ticket {
  epoch: number;
  at: number;
}

export interface ReadCache<V> {
  /** The kept value for `key`, or undefined. */
  get(key: string): V | undefined;
  /** Taken right before reading the database; `store` keeps the value only if it is still valid. */
  ticket(): Ticket;
  store(key: string, value: V, ticket: Ticket): void;
  readonly size: number;
}

/**
 * The kept value, at once (no promise to make or wait for: the request path's
 * hits), or `load()`'s, kept if still valid when it arrives.
 */
export function cachedRead<V>(cache: ReadCache<V>, key: string, load: () => Promise<V>): V | Promise<V> {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const ticket = cache.ticket();
  return load().then((value) => {
    cache.store(key, value, ticket);
    return value;
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
  return value;
}

/** The read caches of one database handle. */
export class ReadCaches {
  private readonly caches = new Map<string, TableCache<unknown>>();
  /** Moves on at every transaction's start and every clear: a load is kept only if it did not. */
  epoch = 0;
  private seenVersion: number | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** For each table, the tables whose deletes cascade into it (directly or not), itself included. */
    private readonly dependencies: (table: string) => ReadonlySet<string>,
    readonly opts: {
      /** True while a transaction of this connection is open (SQLite: reads share its connection). */
      inTransaction: () => boolean;
      /** SQLite: changes when another process commits. */
      externalVersion?: () => number;
      /** How long an entry may live (Infinity: until cleared; 0: nothing is kept). */
      ttlMs: number;
      now?: () => number;
    },
  ) {
    this.now = opts.now ?? (() => performance.now());
  }

  readonly now: () => number;

  /** The cache `spec` declares, created on first use. */
  cache<V>(spec: ReadCacheSpec<V>): ReadCache<V> {
    let c = this.caches.get(spec.name);
    if (!c) {
      c = new TableCache<unknown>(this, this.closure(spec.tables), spec.maxEntries, spec.maxBytes);
      this.caches.set(spec.name, c);
    }
    return c as TableCache<V>;
  }

  private closure(tables: readonly string[]): Set<string> {
    const deps = new Set<string>();
    for (const t of tables) for (const d of this.dependencies(t)) deps.add(d);
    return deps;
  }

  private everyDeclared: { count: number; deps: Set<string> } = { count: -1, deps: new Set() };

  /** When a transaction of this connection begins. */
  began(): void {
    this.epoch++;
  }

  /** True when a write to one of these tables could change what some declared cache holds (here or on another instance). */
  affects(tables: readonly string[]): boolean {
    if (this.everyDeclared.count !== declared.size) {
      this.everyDeclared = { count: declared.size, deps: this.closure([...declared.values()].flat()) };
    }
    const deps = this.everyDeclared.deps;
    return tables.some((t) => deps.has(t));
  }

  /** After a commit of this process that wrote these tables. */
  committed(tables: readonly string[]): void {
    for (const c of this.caches.values()) if (tables.some((t) => c.deps.has(t))) c.clear();
  }

  /** Another instance wrote (or may have: its notifications could have been missed). */
  clearAll(): void {
    for (const c of this.caches.values()) c.clear();
  }

  /** Clears everything when another process committed since the last look (looked at most every EXTERNAL_CHECK_MS). */
  checkExternal(): void {
    if (!this.opts.externalVersion) return;
    const now = this.now();
    if (now - this.checkedAt < EXTERNAL_CHECK_MS) return;
    this.checkedAt = now;
    const v = this.opts.externalVersion();
    if (v === this.seenVersion) return;
    const first = this.seenVersion === undefined;
    this.seenVersion = v;
    if (!first) this.clearAll();
  }

}


class TableCache<V> implements ReadCache<V> {
  private readonly entries = new Map<string, { value: V; until: number; bytes: number }>();
  private bytes = 0;

  constructor(
    private readonly owner: ReadCaches,
    readonly deps: ReadonlySet<string>,
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  get(key: string): V | undefined {
    this.owner.checkExternal();
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until !== Infinity && this.owner.now() >= e.until) {
      this.remove(key);
      return undefined;
    }
    return e.value;
  }

  ticket(): Ticket {
    this.owner.checkExternal();
    // -1: a read inside an open transaction is never kept.
    return { epoch: this.owner.opts.inTransaction() ? -1 : this.owner.epoch, at: this.owner.now() };
  }

  store(key: string, value: V, ticket: Ticket): void {
    const { ttlMs, inTransaction } = this.owner.opts;
    if (ttlMs <= 0 || ticket.epoch !== this.owner.epoch || inTransaction()) return;
    // Measured on a miss only (a store follows a database read).
    const bytes = JSON.stringify(value)?.length ?? 0;
    if (bytes > this.maxBytes) return;
    this.remove(key);
    while (this.entries.size > 0 && (this.entries.size >= this.maxEntries || this.bytes + bytes > this.maxBytes)) {
      this.remove(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value: deepFreeze(value), until: ticket.at + ttlMs, bytes });
    this.bytes += bytes;
  }

  private remove(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }

  clear(): void {
    this.owner.epoch++;
    this.entries.clear();
    this.bytes = 0;
  }

  get size(): number {
    return this.entries.size;
  }
}
