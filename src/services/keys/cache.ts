import type { Database } from "../../../db/client";
import { EXTERNAL_CHECK_MS } from "../../../db/read-cache";
import type { EventBus } from "../../adapters/events/port";
import type { Logger } from "../../logger";

/** What instances signal each other when a key or a workspace changed. */
export const KEYS_TOPIC = "keys";
/**
 * How long a key lookup is reused when nothing says it changed. It bounds
 * how stale an answer can be however the change was made (an operator's SQL,
 * a notification lost while an instance reconnected): one second, the bound
 * the service promises for revocation. Changes made through the service
 * reach every instance within milliseconds, so this is only the backstop.
 */
export const DEFAULT_KEY_CACHE_TTL_MS = 1000;
/** Entries kept at most; the oldest goes first. */
const MAX_ENTRIES = 10_000;
/**
 * SQLite: how often a lookup reads `PRAGMA data_version` to see another
 * process's commit. Reading it costs as much as a query (a read transaction:
 * file-lock system calls), so not on every request; 50 ms keeps the CLI's
 * revocations well inside the one-second bound.
 */
// The same throttle as the read caches: one PRAGMA data_version read per 50 ms.
export { EXTERNAL_CHECK_MS };

/** A key's row with its workspace's settings: everything authentication reads. */
export interface CachedKey {
  id: string;
  name: string;
  secretHash: string;
  /** `secretHash` decoded, once per cached row. */
  secretDigest?: Uint8Array;
  role: string;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  workspaceId: string;
  features: string[];
  defaultVersion: string | null;
}

interface Ticket {
  generation: number;
  at: number;
}

/**
 * Key lookups of this process, by the key's lookup part (never the secret:
 * the secret is checked against the stored digest on every request).
 *
 * Invalidation: any committed transaction of this process that writes
 * `api_keys` or `workspaces` clears it at once (Database.onCommit), and tells
 * the other instances (EventBus.signal: NOTIFY on Postgres), which clear
 * theirs; on SQLite a commit by another process (the admin CLI) shows in
 * `PRAGMA data_version`, read at most every EXTERNAL_CHECK_MS. An entry lives at most `ttlMs`
 * from the moment its read began, and a read that began before a clear is
 * not kept, so a clear during a lookup cannot let the old row back in.
 */
export class KeyCache {
  private readonly entries = new Map<string, { key: CachedKey; until: number }>();
  private generation = 0;
  private seenVersion: number | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly ttlMs: number,
    private readonly externalVersion?: () => number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get(lookup: string): CachedKey | undefined {
    if (this.ttlMs <= 0) return undefined;
    const now = this.now();
    if (this.externalVersion && now - this.checkedAt >= EXTERNAL_CHECK_MS) {
      this.checkedAt = now;
      const v = this.externalVersion();
      if (v !== this.seenVersion) {
        this.seenVersion = v;
        this.clear();
        return undefined;
      }
    }
    const e = this.entries.get(lookup);
    if (!e) return undefined;
    if (now >= e.until) {
      this.entries.delete(lookup);
      return undefined;
    }
    return e.key;
  }

  /** Taken before reading the database; `store` keeps the row only if nothing was cleared since. */
  ticket(): Ticket {
    return { generation: this.generation, at: this.now() };
  }

  store(lookup: string, key: CachedKey, ticket: Ticket): void {
    if (this.ttlMs <= 0 || ticket.generation !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES && !this.entries.has(lookup)) {
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(lookup, { key, until: ticket.at + this.ttlMs });
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

const caches = new WeakMap<Database, KeyCache>();

/** This database's key cache; one with the default lifetime and local invalidation when none was started. */
export function keyCacheOf(db: Database): KeyCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new KeyCache(DEFAULT_KEY_CACHE_TTL_MS, db.externalVersion);
    caches.set(db, cache);
    const c = cache;
    db.onCommit((tables) => {
      if (tables.has(db.t.apiKeys) || tables.has(db.t.workspaces)) c.clear();
    });
  }
  return cache;
}

/**
 * At start-up (service and admin CLI alike, so that the CLI's changes reach
 * the running instances): the cache's lifetime, clearing on this process's
 * commits to keys and workspaces, signalling other instances, and clearing
 * on their signals. Answers the function that stops it.
 */
export function startKeyCache(opts: { db: Database; events: EventBus; log: Logger; ttlMs?: number }): () => void {
  const { db, events, log } = opts;
  const cache = new KeyCache(opts.ttlMs ?? DEFAULT_KEY_CACHE_TTL_MS, db.externalVersion);
  caches.set(db, cache);
  const offCommit = db.onCommit((tables) => {
    if (!tables.has(db.t.apiKeys) && !tables.has(db.t.workspaces)) return;
    cache.clear();
    events.signal?.(KEYS_TOPIC).catch((err) => log.error({ err }, "could not tell other instances that keys changed"));
  });
  const offSignal = events.onSignal?.(KEYS_TOPIC, () => cache.clear()) ?? (() => {});
  return () => {
    offCommit();
    offSignal();
  };
}
