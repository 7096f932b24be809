import { and, eq, gt, like, lt, sql } from "drizzle-orm";
import type { Database } from "../../../db/client";
import type { Logger } from "../../logger";
import { settlesWithin } from "../../runtime/bounded";

/** One budget: at most `quota` units (requests, bytes, failures) per fixed window. */
export interface Budget {
  /** The policy name in the RateLimit header fields. */
  name: string;
  quota: number;
  windowMs: number;
}

export interface Verdict {
  allowed: boolean;
  /** Units left in this window after this call. */
  remaining: number;
  /** Whole seconds until the window ends (at least 1). */
  resetSeconds: number;
}

interface Entry {
  window: number;
  /** Units counted by every instance, as last read from the database (in process: 0). */
  known: number;
  /** Units this instance counted since its last sync. */
  pending: number;
  /** Units of a sync under way (not yet known to be in the shared count). */
  inFlight: number;
  /** Bumped by each sync that sets `known`: a read that started before it is stale. */
  generation: number;
  /** Read since the last sync: the next sync refreshes `known` even with nothing pending. */
  touched: boolean;
  /** Postgres: a read of the shared count, while it is under way. */
  loading: Promise<void> | null;
  /** When `known` was last read from the database (performance.now()). */
  syncedAt: number;
}

const PRUNE_EVERY = 4096;
/** How long closing waits for the last share of counts (counts are advisory: a lost batch is acceptable, a hang is not). */
export const CLOSE_FLUSH_MS = 2_000;

/** The shared row's subject: the budget's name and the key or address (`requests:key_...`). */
const rowSubject = (budget: Budget, subject: string) => `${budget.name}:${subject}`;
/** A shared count older than this many sync intervals is read again before the next decision. */
const STALE_SYNCS = 4;

/**
 * Fixed-window counters (docs/decisions/rate-limits.md). In process, a Map.
 * On Postgres each instance decides from the shared count it last read plus
 * what it counted since, and adds its counts to the `rate_limit_windows` row
 * every `syncMs` in one statement for all budgets it touched (reading the
 * new totals back). A window's first call on an instance reads the shared
 * count before deciding, and so does a call after the instance was idle for
 * the key (no sync for four intervals); no other call waits on the database.
 * Instances can together admit at most what they admit within one sync
 * interval above the quota.
 */
export class RateLimiter {
  private readonly tables = new Map<Budget, Map<string, Entry>>();
  private readonly watched = new Set<Budget>();
  /** A watched budget was asked about since the last sync. */
  private watching = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private flushing: Promise<void> | null = null;
  private calls = 0;
  private lastDbPrune = 0;
  private maxWindowMs = 0;
  /** Closed: nothing is scheduled any more (a failed share is not tried again). */
  private closed = false;

  constructor(
    private readonly opts: { db: Database | null; syncMs: number; now: () => number; log: Logger },
  ) {}

  /**
   * Counts `cost` units against `subject` under `budget` when `need` units
   * (default: the cost) fit; a refused call counts nothing. `now`: the
   * clock's time in ms, when the caller has it already.
   */
  take(budget: Budget, subject: string, cost: number, need = cost, now = this.opts.now()): Verdict | Promise<Verdict> {
    const e = this.entryOf(budget, subject, now);
    if (e.loading) {
      const entry = e;
      return e.loading.then(() => this.decide(budget, entry, cost, need, now));
    }
    return this.decide(budget, e, cost, need, now);
  }

  /**
   * Whether `need` more units would fit, counting nothing; null when they
   * would and this instance has nothing counted for the subject in this
   * window (in process: the answer of every call that finds nothing, with
   * nothing allocated). On Postgres the shared count is read first, as `take` does.
   */
  refusal(budget: Budget, subject: string, need: number, now = this.opts.now()): Verdict | null | Promise<Verdict | null> {
    const watched = this.watched.has(budget);
    if ((!this.opts.db || watched) && need <= budget.quota) {
      const e = this.tableOf(budget).get(subject);
      if (!e || e.window !== Math.floor(now / budget.windowMs)) return null;
      // A watched budget's counts are kept current by the syncs: no read of its own (but a failure being counted is waited for).
      if (watched) return e.loading ? e.loading.then(() => this.decideWithout(budget, e, need, now)) : this.decideWithout(budget, e, need, now);
    }
    const v = this.take(budget, subject, 0, need, now);
    if (v instanceof Promise) return v.then((r) => (r.allowed ? null : r));
    return v.allowed ? null : v;
  }

  /**
   * Whether `refusal` could refuse anyone under `budget`: only once some
   * subject has counted units in process, or (a watched budget on Postgres)
   * this instance has seen some in the shared counts; while it is asked, the
   * shared counts are read again every sync interval.
   */
  mayRefuse(budget: Budget): boolean {
    if (!this.opts.db) return this.tableOf(budget).size > 0;
    if (!this.watched.has(budget)) return true;
    this.watching = true;
    this.schedule();
    return this.tableOf(budget).size > 0;
  }

  private decideWithout(budget: Budget, e: Entry, need: number, now: number): Verdict | null {
    const v = this.decide(budget, e, 0, need, now);
    return v.allowed ? null : v;
  }

  /** The subject's entry for the window `now` falls in (a new one when its window has passed); reads the shared count when stale. */
  private entryOf(budget: Budget, subject: string, now: number): Entry {
    const window = Math.floor(now / budget.windowMs);
    const table = this.tableOf(budget);
    let e = table.get(subject);
    if (!e || e.window !== window) {
      if (++this.calls % PRUNE_EVERY === 0) this.prune(now);
      e = { window, known: 0, pending: 0, inFlight: 0, generation: 0, touched: false, loading: null, syncedAt: Number.NEGATIVE_INFINITY };
      table.set(subject, e);
    }
    // A count not synced for a while (this instance was idle for the key) is read again before deciding; a busy key is synced by the batches.
    if (this.opts.db && !e.loading && e.pending === 0 && e.inFlight === 0 && performance.now() - e.syncedAt > STALE_SYNCS * this.opts.syncMs) {
      e.loading = this.load(budget, subject, e, window * budget.windowMs);
    }
    return e;
  }

  /** Counts units already spent (an upload whose size was known only once read), whether or not they fit. */
  charge(budget: Budget, subject: string, cost: number): void {
    const e = this.entryOf(budget, subject, this.opts.now());
    const add = () => {
      e.pending += cost;
      this.schedule();
    };
    if (e.loading) void e.loading.then(add);
    else add();
  }

  private decide(budget: Budget, e: Entry, cost: number, need: number, now: number): Verdict {
    const used = e.known + e.inFlight + e.pending;
    const resetSeconds = Math.max(1, Math.ceil(((e.window + 1) * budget.windowMs - now) / 1000));
    e.touched = true;
    if (used + need > budget.quota) return { allowed: false, remaining: Math.max(0, budget.quota - used), resetSeconds };
    if (cost > 0) {
      e.pending += cost;
      this.schedule();
    }
    return { allowed: true, remaining: budget.quota - used - cost, resetSeconds };
  }

  private async load(budget: Budget, subject: string, e: Entry, windowStart: number): Promise<void> {
    const db = this.opts.db as Database;
    const w = db.t.rateLimitWindows;
    const generation = e.generation;
    try {
      const [row] = await db.read
        .select({ used: w.used })
        .from(w)
        .where(and(eq(w.subject, rowSubject(budget, subject)), eq(w.windowStart, windowStart)));
      if (e.generation === generation) {
        e.known = row?.used ?? 0;
        e.syncedAt = performance.now();
      }
    } catch (err) {
      // The database is down: decide from this instance's own counts rather than refuse everyone.
      this.opts.log.warn({ err }, "rate limits: could not read the shared count");
    } finally {
      e.loading = null;
    }
  }

  private schedule(): void {
    if (!this.opts.db || this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.opts.syncMs);
    this.timer.unref?.();
  }

  /** Adds this instance's counts to the shared rows and reads the totals back. */
  async flush(): Promise<void> {
    const db = this.opts.db;
    if (!db) return;
    while (this.flushing) await this.flushing;
    const batch: { id: string; e: Entry; windowStart: number; add: number }[] = [];
    for (const [budget, table] of this.tables) {
      for (const [subject, e] of table) {
        if (e.loading || (!e.touched && e.pending === 0)) continue;
        batch.push({ id: rowSubject(budget, subject), e, windowStart: e.window * budget.windowMs, add: e.pending });
        e.inFlight += e.pending;
        e.pending = 0;
        e.touched = false;
      }
    }
    // Watched budgets are read back while they are asked about (mayRefuse), whatever this instance counted.
    const watched = this.watching ? [...this.watched] : [];
    this.watching = false;
    if (batch.length === 0 && watched.length === 0) return;
    const w = db.t.rateLimitWindows;
    const readAt = this.opts.now();
    const mine = (this.flushing = (async () => {
      try {
        const { rows, seen } = await db.tx(
          async (tx) => {
            const rows =
              batch.length === 0
                ? []
                : await tx
                    .insert(w)
                    .values(batch.map((b) => ({ subject: b.id, windowStart: b.windowStart, used: b.add })))
                    .onConflictDoUpdate({ target: [w.subject, w.windowStart], set: { used: sql`${w.used} + excluded.used` } })
                    .returning({ subject: w.subject, windowStart: w.windowStart, used: w.used });
            const seen: { budget: Budget; window: number; rows: { subject: string; used: number }[] }[] = [];
            for (const budget of watched) {
              const window = Math.floor(readAt / budget.windowMs);
              const found = await tx
                .select({ subject: w.subject, used: w.used })
                .from(w)
                .where(and(eq(w.windowStart, window * budget.windowMs), like(w.subject, `${budget.name}:%`), gt(w.used, 0)));
              seen.push({ budget, window, rows: found });
            }
            return { rows, seen };
          },
          { quiet: true },
        );
        for (const { budget, window, rows: found } of seen) this.learn(budget, window, found);
        const totals = new Map(rows.map((r) => [`${r.subject}@${r.windowStart}`, r.used]));
        for (const b of batch) {
          const total = totals.get(`${b.id}@${b.windowStart}`);
          b.e.inFlight -= b.add;
          // An entry's window never changes (a later window gets a new entry), so the total is its own.
          if (total !== undefined) {
            b.e.known = total;
            b.e.generation++;
            b.e.syncedAt = performance.now();
          }
        }
        const now = this.opts.now();
        if (now - this.lastDbPrune > 60_000) {
          this.lastDbPrune = now;
          await db.tx((tx) => tx.delete(w).where(lt(w.windowStart, now - 2 * this.maxWindowMs)), { quiet: true });
        }
      } catch (err) {
        this.opts.log.warn({ err }, "rate limits: could not share the counts; kept for the next try");
        for (const b of batch) {
          b.e.inFlight -= b.add;
          b.e.pending += b.add;
        }
        this.schedule();
      }
    })());
    try {
      await mine;
    } finally {
      // A share that waited for this one may have started its own meanwhile.
      if (this.flushing === mine) this.flushing = null;
    }
  }

  /** Shared counts of a watched budget in `window`, as read by a sync: subjects not seen before get an entry. */
  private learn(budget: Budget, window: number, rows: { subject: string; used: number }[]): void {
    const table = this.tableOf(budget);
    const prefix = budget.name.length + 1;
    for (const r of rows) {
      const subject = r.subject.slice(prefix);
      let e = table.get(subject);
      if (e && e.window !== window) {
        if (e.window > window) continue;
        e = undefined;
      }
      if (!e) {
        e = { window, known: 0, pending: 0, inFlight: 0, generation: 0, touched: false, loading: null, syncedAt: Number.NEGATIVE_INFINITY };
        table.set(subject, e);
      }
      if (e.pending === 0 && e.inFlight === 0 && !e.loading) {
        e.known = Math.max(e.known, r.used);
        e.generation++;
        e.syncedAt = performance.now();
      }
    }
  }

  /**
   * Budgets are few and fixed; each has its own table of subjects (no string
   * is built per call to find an entry). A watched budget (on Postgres) is
   * checked far more often than it counts (failed logins, checked on every
   * request): instead of reading each subject's shared count before a check,
   * each sync reads the subjects that have counted any in the current window.
   */
  register(budget: Budget, opts: { watched?: boolean } = {}): Budget {
    if (opts.watched) this.watched.add(budget);
    this.tableOf(budget);
    if (budget.windowMs > this.maxWindowMs) this.maxWindowMs = budget.windowMs;
    return budget;
  }

  private tableOf(budget: Budget): Map<string, Entry> {
    let table = this.tables.get(budget);
    if (!table) this.tables.set(budget, (table = new Map()));
    return table;
  }

  private prune(now: number): void {
    for (const [budget, table] of this.tables) {
      for (const [subject, e] of table) {
        if (e.pending === 0 && !e.loading && (e.window + 1) * budget.windowMs < now) table.delete(subject);
      }
    }
  }

  /**
   * Shares what is left to share and stops the timer. The share is given up
   * after `timeoutMs` (a database that does not answer must not hold
   * shutdown up): a warning names the counts that were not shared.
   */
  async close(timeoutMs = CLOSE_FLUSH_MS): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.closed = true;
    if (!this.opts.db) return;
    if (await settlesWithin(this.flush(), timeoutMs)) {
      const left = this.unshared();
      if (left.length > 0) this.opts.log.warn({ unshared: left }, "rate limits: the last counts could not be shared before closing; given up");
      return;
    }
    this.opts.log.warn(
      { unshared: this.unshared(), timeoutMs },
      "rate limits: the last share of counts did not finish in time at close; given up",
    );
  }

  /** Per budget, the subjects and units this instance counted that are not known to be in the shared counts. */
  private unshared(): { budget: string; subjects: number; units: number }[] {
    const out: { budget: string; subjects: number; units: number }[] = [];
    for (const [budget, table] of this.tables) {
      let subjects = 0;
      let units = 0;
      for (const e of table.values()) {
        const n = e.pending + e.inFlight;
        if (n > 0) {
          subjects++;
          units += n;
        }
      }
      if (subjects > 0) out.push({ budget: budget.name, subjects, units });
    }
    return out;
  }
}
