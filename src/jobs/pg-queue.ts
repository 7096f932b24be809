import { sql as dsql } from "drizzle-orm";
import { Logger as GraphileLogger, parseCronItems, runMigrations, type Task, type WorkerPool } from "graphile-worker";
import postgres from "postgres";
import type { Writer } from "../../db/client";
import { PG_CLOSE_TIMEOUT_SECONDS } from "../../db/pg-close";
import { settlesWithin } from "../runtime/bounded";
import { checkCron } from "./cron";
import { OutcomeLedger } from "./pg-replay";
import { GraphileRun } from "./pg-runner";
import type { CronSpec, JobDefinition, JobQueue, JobSpec, QueueHealth, WaitingJobs } from "./port";
import { type Attempts, type Envelope, graphileLogger, graphileTask, type InHand, LivenessLost } from "./pg-attempts";
import { asError } from "./run-job";
import { checkSpec, DEFAULT_MAX_ATTEMPTS, type QueueSettings } from "./spec";

export type PgQueueOptions = QueueSettings;

/** How long stopping waits for the database to hand back the jobs in hand (and for graphile's forceful shutdown). */
const RELEASE_MS = 2_000;
/** Advisory-lock namespace of worker liveness (pg_advisory_lock(namespace, hashtext(pool id))). */
const LIVENESS_NS = 741329021;
/** Restart backoff of a runner that stopped unexpectedly: 0.5 s doubling up to 10 s. */
const RESTART_BASE_MS = 500;
const RESTART_MAX_MS = 10_000;
/** See `takeoverMs`. */
const TAKEOVER_MS = 5_000;


export async function createPgJobQueue(o: PgQueueOptions): Promise<JobQueue> {
  if (!o.db.url) throw new Error("job queue: the Postgres database has no connection URL");
  const logger = graphileLogger(o.log);
  // Installs or upgrades the graphile_worker schema (under graphile's own lock), so enqueue works before start.
  await runMigrations({ connectionString: o.db.url, logger });
  return new PgJobQueue(o, o.db.url, logger);
}

/**
 * graphile-worker on Postgres (docs/decisions/jobs.md). The library claims
 * with SKIP LOCKED, wakes on LISTEN/NOTIFY, de-duplicates by job key and
 * runs crons once per slot. This class adds what the port asks and the
 * library leaves fixed: the retry delay (graphile waits e^attempt seconds),
 * re-claiming a dead worker's jobs in about a lease instead of four hours
 * (liveness via a session advisory lock per worker pool), handing unfinished
 * jobs back at shutdown without spending an attempt, and onGiveUp.
 */
class PgJobQueue implements JobQueue {
  readonly kind = "pg" as const;
  private readonly sql: postgres.Sql;
  /** One connection, never recycled: it holds this pool's liveness lock for as long as the process lives. */
  private live: postgres.Sql | null = null;
  private stopping = false;
  private lockHeld = false;
  private current: GraphileRun | null = null;
  private pool: WorkerPool | null = null;
  private poolId: string | null = null;
  private sweeper: ReturnType<typeof setInterval> | null = null;
  private taskList: Record<string, Task> | null = null;
  private cronItems: ReturnType<typeof parseCronItems> = [];
  private state: QueueHealth = { state: "stopped", restarts: 0, since: new Date() };
  private readonly ledger = new OutcomeLedger();
  /** A job locked this long by a pool whose liveness lock is free is taken back (a new pool takes its lock within ms). */
  private readonly takeoverMs: number;
  private sweeping = false;
  private readonly inHand = new Map<string, InHand>();
  private readonly attempts: Attempts;

  constructor(
    private readonly o: PgQueueOptions,
    private readonly url: string,
    private readonly logger: GraphileLogger,
  ) {
    this.sql = postgres(url, { max: 3, connect_timeout: 5, onnotice: () => {} });
    this.attempts = { inHand: this.inHand, ledger: this.ledger, sql: this.sql, poolId: () => this.poolId, retry: o.retry, log: o.log };
    this.takeoverMs = Math.min(o.leaseMs, TAKEOVER_MS);
  }

  async enqueue(w: Writer, spec: JobSpec): Promise<void> {
    checkSpec(spec);
    const maxAttempts = spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    const envelope: Envelope = { payload: spec.payload ?? null, maxAttempts };
    const key = spec.key ?? null;
    // 'unsafe_dedupe': a waiting or running job with the key makes this a
    // no-op. A job that failed for good still holds its key in graphile;
    // 'replace' frees it (the failed row stays, keyless) and adds the new job.
    await w.execute(dsql`select graphile_worker.add_job(
      ${spec.name}::text,
      ${JSON.stringify(envelope)}::json,
      run_at => ${spec.runAt?.toISOString() ?? null}::timestamptz,
      max_attempts => ${maxAttempts}::int,
      job_key => ${key}::text,
      job_key_mode => (case when exists (
        select 1 from graphile_worker.jobs j
        where j.key = ${key}::text and j.locked_at is null and j.attempts >= j.max_attempts
      ) then 'replace' else 'unsafe_dedupe' end)
    )`);
  }

  async waiting(): Promise<WaitingJobs[]> {
    const rows = await this.sql<{ kind: string; waiting: string; age: number | null }[]>`
      select task_identifier as kind, count(*) as waiting, extract(epoch from now() - min(run_at))::float8 as age
      from graphile_worker.jobs
      where locked_at is null and run_at <= now() and attempts < max_attempts
      group by task_identifier`;
    return rows.map((r) => ({ kind: r.kind, waiting: Number(r.waiting), oldestAgeSeconds: Math.max(0, r.age ?? 0) }));
  }

  add(spec: JobSpec): Promise<void> {
    return this.o.db.tx((w) => this.enqueue(w, spec));
  }

  async start(definitions: JobDefinition<any>[], crons: CronSpec[] = []): Promise<void> {
    if (this.current || this.taskList) throw new Error("job queue already started");
    const names = new Set(definitions.map((d) => d.name));
    for (const c of crons) {
      checkCron(c);
      if (!names.has(c.job)) throw new Error(`cron "${c.name}" names job "${c.job}", which has no definition`);
    }
    // Nothing to run: graphile would log "No tasks found" on every poll.
    if (definitions.length === 0) return;
    this.live = postgres(this.url, {
      max: 1,
      idle_timeout: 0,
      max_lifetime: null,
      connect_timeout: 5,
      onnotice: () => {},
      onclose: () => this.livenessLost(),
    });
    this.taskList = {};
    for (const d of definitions) this.taskList[d.name] = graphileTask(d, this.attempts);
    this.cronItems = parseCronItems(
      crons.map((c) => ({
        task: c.job,
        match: c.cron,
        identifier: c.name,
        payload: { payload: c.payload ?? null, maxAttempts: DEFAULT_MAX_ATTEMPTS } satisfies Envelope,
        options: { backfillPeriod: 0, maxAttempts: DEFAULT_MAX_ATTEMPTS },
      })),
    );
    await this.startRunner();
    // A dead worker's jobs are looked for often enough that a restarted instance resumes them within seconds.
    this.sweeper = setInterval(() => void this.sweep(), Math.max(20, Math.floor(this.takeoverMs / 2)));
  }

  health(): QueueHealth {
    return { ...this.state };
  }

  private setState(state: QueueHealth["state"], lastError?: string): void {
    this.state = { state, restarts: this.state.restarts + (state === "restarting" ? 1 : 0), lastError: lastError ?? this.state.lastError, since: new Date() };
  }

  /** Starts graphile's runner and watches it: one that stops while the queue is not stopping is started again. */
  private async startRunner(): Promise<void> {
    const run = await GraphileRun.start({
      url: this.url,
      concurrency: this.o.concurrency,
      pollMs: this.o.pollMs,
      logger: this.logger,
      log: this.o.log,
      taskList: this.taskList!,
      cronItems: this.cronItems,
      onPool: (workerPool) => {
        this.pool = workerPool;
        this.poolId = workerPool.id;
        // Before the pool's first claim can be older than the take-over grace, it holds its liveness lock.
        void this.holdLiveness();
      },
    });
    this.current = run;
    this.setState("running");
    const poolId = this.poolId;
    void run.stopped.then((reason) => this.runnerStopped(run, poolId, reason));
  }

  /**
   * graphile stops its runner when it cannot record a job's completion or
   * failure (the database went away). The outcomes its tasks decided are
   * replayed from the ledger once the database answers, the stopped pool's
   * liveness lock is dropped, and a new runner is started, with backoff.
   */
  private runnerStopped(run: GraphileRun, poolId: string | null, reason: string): void {
    if (this.stopping || this.current !== run) return;
    this.current = null;
    this.setState("restarting", reason);
    this.o.log.error({ reason, pool: poolId, restarts: this.state.restarts }, "job runner stopped unexpectedly; restarting it");
    void (async () => {
      await run.dispose();
      // A task of the stopped pool that has not returned is abandoned: the replay unlocks its job, which runs again.
      for (const j of this.inHand.values()) j.controller.abort(new Error("job runner stopped: job handed back"));
      this.inHand.clear();
      for (let attempt = 0; !this.stopping; attempt++) {
        await new Promise((r) => setTimeout(r, Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** attempt)));
        if (this.stopping) return;
        try {
          if (poolId) {
            const counts = await this.ledger.replay(this.sql, poolId);
            this.o.log.warn({ pool: poolId, ...counts }, "replayed the outcomes of the stopped job runner");
            // Released here, after the replay: until then no other instance takes (and runs again) what it finished.
            await this.live?.unsafe("select pg_advisory_unlock($1::int, hashtext($2::text))", [LIVENESS_NS, poolId]).catch(() => undefined);
            poolId = null;
          }
          await this.startRunner();
          this.o.log.warn({ pool: this.poolId, restarts: this.state.restarts }, "job runner restarted");
          return;
        } catch (e) {
          this.state.lastError = asError(e).message;
          this.o.log.warn({ err: asError(e), attempt: attempt + 1 }, "job runner restart failed; will try again");
        }
      }
    })();
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    const run = this.current;
    this.stopping = true;
    this.setState("stopped");
    if (this.sweeper) clearInterval(this.sweeper);
    if (!run) {
      await this.dropLiveness();
      await this.sql.end({ timeout: PG_CLOSE_TIMEOUT_SECONDS });
      return;
    }
    this.current = null;
    // Graceful: no more claims; resolves once the jobs in hand are done.
    const graceful = run.runner.stop().catch((e) => this.o.log.error({ err: asError(e) }, "job runner stop failed"));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finished = await Promise.race([
      graceful.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (!finished) {
      // Bounded: a database that does not answer must not hold shutdown up. Jobs not handed back stay locked by
      // this pool, whose liveness lock goes with its connection below: another instance or the next start takes them back.
      const release = this.release().catch((e) =>
        this.o.log.warn({ err: asError(e) }, "job queue: could not hand back the jobs in hand; they are taken back once this instance is gone"),
      );
      if (!(await settlesWithin(release, RELEASE_MS))) {
        this.o.log.warn({ timeoutMs: RELEASE_MS }, "job queue: handing back the jobs in hand got no answer; they are taken back once this instance is gone");
      }
      // Nothing is locked by this pool any more, so graphile's forceful shutdown fails no job.
      await settlesWithin(Promise.resolve().then(() => this.pool?.forcefulShutdown("job queue stop timed out; jobs handed back")), RELEASE_MS);
      await Promise.race([graceful, new Promise((r) => setTimeout(r, 1_000))]);
    }
    await run.dispose();
    await this.dropLiveness();
    await this.sql.end({ timeout: PG_CLOSE_TIMEOUT_SECONDS });
  }

  /** Unlocks the jobs still in hand and gives their attempt back, in one transaction, then aborts them here. */
  private async release(): Promise<void> {
    const left = [...this.inHand.values()];
    this.inHand.clear();
    for (const j of left) j.controller.abort(new Error("job queue stopping: job handed back"));
    if (!this.poolId) return;
    await this.sql.begin(async (tx) => {
      await tx`select graphile_worker.force_unlock_workers(array[${this.poolId}]::text[])`;
      for (const j of left) {
        await tx`select graphile_worker.reschedule_jobs(array[${j.id}]::bigint[], attempts => ${j.attempts - 1}::int)`;
      }
    });
    if (left.length > 0) this.o.log.warn({ jobs: left.map((j) => j.id) }, "job queue stopped with jobs in hand; handed them back");
  }

  private async holdLiveness(): Promise<void> {
    try {
      await this.live!`select pg_advisory_lock(${LIVENESS_NS}::int, hashtext(${this.poolId}::text))`;
      this.lockHeld = true;
    } catch (e) {
      this.o.log.error({ err: asError(e) }, "could not take the worker liveness lock");
    }
  }

  /**
   * The liveness connection closed under a running pool (network, server
   * restart, terminated backend): other workers may already be taking this
   * pool's jobs, so the attempts in hand are abandoned (their outcome is not
   * recorded; each task gives its attempt back, pg-attempts.ts) and the lock
   * is taken again on a new connection. They stay in hand until their task
   * returns, so the orphan sweep does not unlock one still running.
   */
  private livenessLost(): void {
    if (this.stopping || !this.poolId) return;
    this.o.log.error({ jobs: [...this.inHand.keys()] }, "worker liveness connection lost; abandoning the jobs in hand");
    for (const j of this.inHand.values()) if (!j.controller.signal.aborted) j.controller.abort(new LivenessLost());
    this.lockHeld = false;
    void this.holdLiveness();
  }

  /**
   * A claim whose reply was lost (the connection reset between the server's
   * commit and the answer) leaves a job locked by this live pool with no task
   * running it; graphile unlocks such a job only after 4 hours. One locked
   * longer than the take-over grace, not in hand and with no decided outcome
   * is unlocked here, its attempt given back (it never ran).
   */
  private async unlockOrphans(): Promise<void> {
    const pool = this.poolId!;
    const locked = await this.sql<{ id: string }[]>`
      select id::text from graphile_worker.jobs
      where locked_by = ${pool} and locked_at < now() - ${this.takeoverMs}::int * interval '1 millisecond'`;
    const orphans = locked.map((j) => j.id).filter((id) => !this.inHand.has(id) && !this.ledger.decidedBy(id, pool));
    for (const id of orphans) {
      await this.sql`update graphile_worker._private_jobs set locked_by = null, locked_at = null, attempts = greatest(attempts - 1, 0)
        where id = ${id}::bigint and locked_by = ${pool} and job_queue_id is null`;
    }
    if (orphans.length > 0) this.o.log.warn({ jobs: orphans }, "unlocked jobs claimed by this worker whose claim reply was lost");
  }

  private async dropLiveness(): Promise<void> {
    const live = this.live;
    this.live = null;
    // Closing the connection releases the lock.
    await live?.end({ timeout: PG_CLOSE_TIMEOUT_SECONDS });
  }

  /**
   * Takes back the jobs of worker pools that are gone. A live pool holds its
   * liveness lock on a connection of its own for as long as the process
   * lives; a killed process loses it with its connection. A job locked for
   * longer than a lease by a pool whose lock is free is unlocked; one that
   * died on its last attempt gets one more claim, which gives it up.
   */
  private async sweep(): Promise<void> {
    if (this.sweeping || !this.live || !this.poolId) return;
    this.sweeping = true;
    this.ledger.prune(this.poolId, 60_000);
    try {
      // Lost with its connection and not yet taken again (database down?): retry before judging others.
      if (!this.lockHeld) await this.holdLiveness();
      await this.unlockOrphans();
      const stale = await this.sql<{ locked_by: string }[]>`
        select distinct locked_by from graphile_worker.jobs
        where locked_by is not null and locked_by <> ${this.poolId}
          and locked_at < now() - ${this.takeoverMs}::int * interval '1 millisecond'`;
      for (const { locked_by: pool } of stale) {
        const [got] = await this.live<{ free: boolean }[]>`select pg_try_advisory_lock(${LIVENESS_NS}::int, hashtext(${pool}::text)) as free`;
        if (!got?.free) continue;
        try {
          const taken = await this.sql.begin(async (tx) => {
            const jobs = await tx<{ id: string; attempts: number; max_attempts: number }[]>`
              select id, attempts, max_attempts from graphile_worker.jobs where locked_by = ${pool}`;
            await tx`select graphile_worker.force_unlock_workers(array[${pool}]::text[])`;
            for (const j of jobs) {
              if (j.attempts >= j.max_attempts) {
                await tx`select graphile_worker.reschedule_jobs(array[${j.id}]::bigint[], max_attempts => ${j.attempts + 1}::int)`;
              }
            }
            return jobs.map((j) => j.id);
          });
          if (taken.length > 0) this.o.log.warn({ deadPool: pool, jobs: taken }, "took back the jobs of a worker that died");
        } finally {
          await this.live`select pg_advisory_unlock(${LIVENESS_NS}::int, hashtext(${pool}::text))`;
        }
      }
    } catch (e) {
      this.o.log.error({ err: asError(e) }, "job liveness sweep failed");
    } finally {
      this.sweeping = false;
    }
  }
}
