import { and, count, eq, inArray, lt, lte, min, or, sql } from "drizzle-orm";
import type { Writer } from "../../db/client";
import { jobs } from "../../db/sqlite/schema/jobs";
import { newId } from "../domain/ids";
import { checkCron, nextSlot } from "./cron";
import { asSqlite, fireCrons, registerCrons } from "./sqlite-crons";
import type { CronSpec, JobDefinition, JobQueue, JobSpec, QueueHealth, WaitingJobs } from "./port";
import { deadPredecessors } from "./predecessor";
import { asError, type Outcome, runJob } from "./run-job";
import { checkSpec, DEFAULT_MAX_ATTEMPTS, type QueueSettings } from "./spec";

export interface SqliteQueueOptions extends QueueSettings {
  workerId: string;
}


interface InHand {
  id: string;
  attempts: number;
  controller: AbortController;
  done: Promise<void>;
}


/**
 * The embedded default's queue: the `jobs` table, claimed under a lease.
 * One process owns the database, but the lease makes no assumption about
 * it: a claim is a `BEGIN IMMEDIATE` transaction (db.tx), a lease that ran
 * out (a killed process) is claimed again, and every write that ends an
 * attempt is conditional on still holding the lease.
 */
export class SqliteJobQueue implements JobQueue {
  readonly kind = "sqlite" as const;
  private readonly definitions = new Map<string, JobDefinition<unknown>>();
  private crons: CronSpec[] = [];
  private readonly inHand = new Map<string, InHand>();
  private running = false;
  private startedAt = new Date(0);
  private timer: ReturnType<typeof setTimeout> | null = null;
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private passing: Promise<void> | null = null;
  private again = false;
  private state: QueueHealth = { state: "stopped", restarts: 0, since: new Date() };
  /** Consecutive failed passes: the next one waits 0.5 s doubling up to 10 s. */
  private failedPasses = 0;

  constructor(private readonly o: SqliteQueueOptions) {}

  async waiting(): Promise<WaitingJobs[]> {
    const now = new Date();
    const rows = await asSqlite(this.o.db.read)
      .select({ kind: jobs.name, waiting: count(), oldest: min(jobs.runAt) })
      .from(jobs)
      .where(and(eq(jobs.status, "pending"), lte(jobs.runAt, now)))
      .groupBy(jobs.name);
    return rows.map((r) => ({ kind: r.kind, waiting: r.waiting, oldestAgeSeconds: r.oldest ? Math.max(0, (now.getTime() - r.oldest.getTime()) / 1000) : 0 }));
  }

  async enqueue(w: Writer, spec: JobSpec): Promise<void> {
    checkSpec(spec);
    const now = new Date();
    await asSqlite(w)
      .insert(jobs)
      .values({
        id: newId("job"),
        name: spec.name,
        // Wrapped, so that a null payload is JSON and not SQL NULL.
        payload: { payload: spec.payload ?? null },
        jobKey: spec.key ?? null,
        status: "pending",
        attempts: 0,
        maxAttempts: spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        runAt: spec.runAt ?? now,
        createdAt: now,
        updatedAt: now,
      })
      // The only other unique index is job_key: a job with this key is waiting or running.
      .onConflictDoNothing();
    // Claims run in db.tx, behind the caller's still-open transaction, so
    // this pass sees the job only once it is committed (and never if not).
    this.wake();
  }

  add(spec: JobSpec): Promise<void> {
    return this.o.db.tx((w) => this.enqueue(w, spec));
  }

  async start(definitions: JobDefinition<any>[], crons: CronSpec[] = []): Promise<void> {
    if (this.running) throw new Error("job queue already started");
    for (const d of definitions) this.definitions.set(d.name, d);
    for (const c of crons) {
      checkCron(c);
      if (!this.definitions.has(c.job)) throw new Error(`cron "${c.name}" names job "${c.job}", which has no definition`);
    }
    this.crons = crons;
    this.startedAt = new Date();
    await registerCrons(this.o.db, crons);
    await this.resumePredecessors();
    this.running = true;
    this.state = { state: "running", restarts: 0, since: new Date() };
    this.heartbeat = setInterval(() => void this.renewLeases(), Math.max(10, Math.floor(this.o.leaseMs / 3)));
    this.wake();
  }

  health(): QueueHealth {
    return { ...this.state };
  }

  /**
   * Jobs left running by an earlier process of this host that is gone (a
   * crash, kill -9): their lease is ended now, so a restarted instance
   * resumes them at once rather than after the lease (docs/reliability.md).
   */
  private async resumePredecessors(): Promise<void> {
    const holders = await asSqlite(this.o.db.read)
      .selectDistinct({ lockedBy: jobs.lockedBy })
      .from(jobs)
      .where(and(eq(jobs.status, "running"), sql`${jobs.lockedBy} is not null`));
    const dead = deadPredecessors(
      holders.map((h) => h.lockedBy!),
      this.o.workerId,
    );
    if (dead.length === 0) return;
    const now = new Date();
    const resumed = await this.o.db.tx((w) =>
      asSqlite(w)
        .update(jobs)
        .set({ lockedUntil: now, updatedAt: now })
        .where(and(eq(jobs.status, "running"), inArray(jobs.lockedBy, dead)))
        .returning({ id: jobs.id }),
    );
    if (resumed.length > 0) this.o.log.warn({ deadWorkers: dead, jobs: resumed.map((r) => r.id) }, "resuming the jobs of a process that died");
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.state = { ...this.state, state: "stopped", since: new Date() };
    if (this.timer) clearTimeout(this.timer);
    await this.passing;
    const inHand = [...this.inHand.values()];
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled(inHand.map((j) => j.done)),
      new Promise<void>((r) => (timer = setTimeout(r, timeoutMs))),
    ]);
    clearTimeout(timer);
    const left = [...this.inHand.values()];
    if (left.length > 0) await this.release(left);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** Hands unfinished jobs back at once (not at lease expiry); an attempt cut short by shutdown is not counted. */
  private async release(left: InHand[]): Promise<void> {
    for (const j of left) {
      this.inHand.delete(j.id);
      j.controller.abort(new Error("job queue stopping: job handed back"));
    }
    await this.o.db.tx(async (w) => {
      for (const j of left) {
        await asSqlite(w)
          .update(jobs)
          .set({ status: "pending", lockedBy: null, lockedUntil: null, attempts: j.attempts - 1, updatedAt: new Date() })
          .where(and(eq(jobs.id, j.id), eq(jobs.lockedBy, this.o.workerId), eq(jobs.attempts, j.attempts)));
      }
    });
    this.o.log.warn({ jobs: left.map((j) => j.id) }, "job queue stopped with jobs in hand; handed them back");
  }

  private wake(): void {
    if (!this.running) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pass(), 0);
  }

  private pass(): void {
    this.timer = null;
    if (!this.running || this.passing) return;
    this.again = false;
    this.passing = this.claimAndSchedule()
      .then(() => {
        if (this.failedPasses === 0) return;
        this.failedPasses = 0;
        this.state = { ...this.state, state: "running", since: new Date() };
        this.o.log.warn("job queue claims again");
      })
      .catch((e) => {
        // Locked or unreadable database: the loop is not left without a timer; it tries again with backoff.
        const err = asError(e);
        if (this.failedPasses++ === 0) {
          this.state = { state: "restarting", restarts: this.state.restarts + 1, lastError: err.message, since: new Date() };
        } else this.state.lastError = err.message;
        this.o.log.error({ err, failedPasses: this.failedPasses }, "job queue pass failed; will try again");
        this.again = false;
        if (this.timer) clearTimeout(this.timer);
        if (this.running) this.timer = setTimeout(() => this.pass(), Math.min(10_000, 500 * 2 ** (this.failedPasses - 1)));
      })
      .finally(() => {
        this.passing = null;
        if (this.again) this.wake();
      });
  }

  private async claimAndSchedule(): Promise<void> {
    await fireCrons(this.o.db, this.crons, { startedAt: this.startedAt, log: this.o.log, enqueue: (w, spec) => this.enqueue(w, spec) });
    const free = this.o.concurrency - this.inHand.size;
    if (free > 0) {
      const claimed = await this.claim(free);
      for (const row of claimed) this.process(row);
      if (claimed.length === free) this.again = true;
    }
    await this.scheduleNext();
  }

  private async claim(limit: number) {
    const names = [...this.definitions.keys()];
    if (names.length === 0) return [];
    return this.o.db.tx(async (w) => {
      const now = new Date();
      const rows = await asSqlite(w)
        .select()
        .from(jobs)
        .where(
          and(
            inArray(jobs.name, names),
            or(
              and(eq(jobs.status, "pending"), lte(jobs.runAt, now)),
              // A lease that ran out: its worker died (the heartbeat renews live ones).
              and(eq(jobs.status, "running"), lt(jobs.lockedUntil, now)),
            ),
          ),
        )
        .orderBy(jobs.runAt)
        .limit(limit);
      const lockedUntil = new Date(now.getTime() + this.o.leaseMs);
      for (const row of rows) {
        row.attempts += 1;
        await asSqlite(w)
          .update(jobs)
          .set({ status: "running", attempts: row.attempts, lockedBy: this.o.workerId, lockedUntil, updatedAt: now })
          .where(eq(jobs.id, row.id));
      }
      return rows;
    });
  }

  private process(row: typeof jobs.$inferSelect): void {
    const controller = new AbortController();
    const entry: InHand = { id: row.id, attempts: row.attempts, controller, done: Promise.resolve() };
    this.inHand.set(row.id, entry);
    entry.done = (async () => {
      const outcome = await runJob({
        definition: this.definitions.get(row.name)!,
        payload: (row.payload as { payload: unknown }).payload,
        jobId: row.id,
        attempt: row.attempts,
        maxAttempts: row.maxAttempts,
        signal: controller.signal,
        retry: this.o.retry,
        log: this.o.log,
      });
      // Released at shutdown or lease lost: the job is no longer ours to record.
      if (this.inHand.get(row.id) !== entry) return;
      const mine = and(eq(jobs.id, row.id), eq(jobs.lockedBy, this.o.workerId), eq(jobs.attempts, row.attempts));
      // The outcome is written until it is (the heartbeat keeps the lease meanwhile); only shutdown gives up on it.
      for (let tries = 0; ; tries++) {
        try {
          await this.recordOutcome(mine, outcome);
          break;
        } catch (e) {
          if (!this.running || this.inHand.get(row.id) !== entry) throw e;
          this.o.log.warn({ jobId: row.id, err: asError(e), tries: tries + 1 }, "could not record job outcome; will try again");
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** tries)));
        }
      }
      this.inHand.delete(row.id);
    })()
      .catch((e) => {
        // Stopping while the database refuses: the lease runs out and the job is claimed again.
        this.inHand.delete(row.id);
        this.o.log.error({ jobId: row.id, err: asError(e) }, "could not record job outcome");
      })
      .finally(() => this.wake());
  }

  private async recordOutcome(mine: ReturnType<typeof and>, outcome: Outcome): Promise<void> {
      const now = new Date();
      await this.o.db.tx(async (w) => {
        const q = asSqlite(w);
        if (outcome.status === "completed") await q.delete(jobs).where(mine);
        else if (outcome.status === "retry") {
          await q
            .update(jobs)
            .set({
              status: "pending",
              runAt: new Date(now.getTime() + outcome.delayMs),
              lockedBy: null,
              lockedUntil: null,
              lastError: outcome.error.message,
              updatedAt: now,
            })
            .where(mine);
        } else {
          // Failed jobs stay for inspection; their key is freed so the same key can be enqueued again.
          await q
            .update(jobs)
            .set({ status: "failed", jobKey: null, lockedBy: null, lockedUntil: null, lastError: outcome.error.message, updatedAt: now })
            .where(mine);
        }
      });
  }

  private async renewLeases(): Promise<void> {
    const held = [...this.inHand.values()];
    if (held.length === 0) return;
    try {
      const now = Date.now();
      const renewed = await this.o.db.tx((w) =>
        asSqlite(w)
          .update(jobs)
          .set({ lockedUntil: new Date(now + this.o.leaseMs) })
          .where(
            and(
              inArray(
                jobs.id,
                held.map((j) => j.id),
              ),
              eq(jobs.lockedBy, this.o.workerId),
              eq(jobs.status, "running"),
            ),
          )
          .returning({ id: jobs.id }),
      );
      const kept = new Set(renewed.map((r) => r.id));
      for (const j of held) {
        if (kept.has(j.id) || this.inHand.get(j.id) !== j) continue;
        // Someone else holds it now (our lease ran out while we were stalled): stop working on it.
        this.inHand.delete(j.id);
        j.controller.abort(new Error("job lease lost"));
        this.o.log.error({ jobId: j.id }, "job lease lost; abandoning the attempt");
      }
    } catch (e) {
      this.o.log.error({ err: asError(e) }, "could not renew job leases");
    }
  }

  /** Sleeps until the next thing that can become due (a run_at, a lease end, a cron slot), at most one poll interval. */
  private async scheduleNext(): Promise<void> {
    if (!this.running || this.again) return;
    const now = Date.now();
    let next = now + this.o.pollMs;
    const names = [...this.definitions.keys()];
    if (names.length > 0) {
      const [row] = await asSqlite(this.o.db.read)
        .select({
          pending: min(sql`case when ${jobs.status} = 'pending' then ${jobs.runAt} end`),
          lease: min(sql`case when ${jobs.status} = 'running' then ${jobs.lockedUntil} end`),
        })
        .from(jobs)
        .where(and(inArray(jobs.name, names), inArray(jobs.status, ["pending", "running"])));
      // Times already past are jobs waiting for a free slot: the job that frees it wakes the loop.
      for (const t of [row?.pending, row?.lease]) if (typeof t === "number" && t > now) next = Math.min(next, t + 1);
    }
    for (const c of this.crons) next = Math.min(next, nextSlot(c.cron, new Date(now)).getTime());
    if (!this.running || this.again) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pass(), Math.max(0, next - Date.now()));
  }
}
