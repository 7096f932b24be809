import { EventEmitter } from "node:events";
import {
  type Logger as GraphileLogger,
  type parseCronItems,
  run,
  type Runner,
  type Task,
  type WorkerEvents,
  type WorkerPool,
} from "graphile-worker";
import pg from "pg";
import type { Logger } from "../logger";
import { asError } from "./run-job";

/** After its pool shut down, how long a runner's own promise is awaited before the runner is taken for stopped. */
const SETTLE_MS = 2_000;
/** A pool whose shutdown began is taken for stopped after this long even if a task in hand has not returned. */
const SHUTDOWN_BOUND_MS = 10_000;
/** A new connection of graphile's pool that is not made in this time fails (pg waits forever by default). */
const CONNECT_TIMEOUT_MS = 5_000;

export interface GraphileRunOptions {
  url: string;
  concurrency: number;
  pollMs: number;
  logger: GraphileLogger;
  log: Logger;
  taskList: Record<string, Task>;
  cronItems: ReturnType<typeof parseCronItems>;
  /** Called when graphile creates the worker pool, before its first claim. */
  onPool(pool: WorkerPool): void;
}

/**
 * One graphile-worker runner on a node-postgres pool of its own, and when it stopped.
 *
 * The pool is the queue's, not graphile's, for two reasons found by resetting
 * live connections through a proxy:
 * - graphile removes the `error` listeners of a pool it made when its runner
 *   releases it; a client of that pool whose socket is reset afterwards (an
 *   idle one not yet ended, or the LISTEN client graphile handed back) emits
 *   `error` with no listener, and the process exits. The listeners here are
 *   never removed.
 * - graphile's runner promise may never settle after its pool stopped: when
 *   two batched completions fail, the batcher's pending count goes below zero
 *   and its release waits for ever (graphile-worker 0.17/0.18 `batch()`), so a
 *   supervisor waiting on `runner.promise` alone never restarts it. `stopped`
 *   also settles once the pool's graceful shutdown is over (every task in hand
 *   has returned, or 10 s passed), and the pool is then ended here.
 */
export class GraphileRun {
  /** Settles with the reason once the runner stopped, for whatever cause; never rejects. */
  readonly stopped: Promise<string>;
  private disposed = false;

  private constructor(
    readonly runner: Runner,
    private readonly pgPool: pg.Pool,
    stopped: Promise<string>,
  ) {
    this.stopped = stopped;
  }

  static async start(o: GraphileRunOptions): Promise<GraphileRun> {
    const pgPool = new pg.Pool({ connectionString: o.url, max: o.concurrency + 2, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    // Lasting listeners: pg then removes a broken client from the pool and reports the error to its next user.
    pgPool.on("error", (err) => o.log.debug({ err }, "job runner: idle database connection failed"));
    pgPool.on("connect", (client) => client.on("error", (err) => o.log.debug({ err }, "job runner: database connection failed")));
    let shutDown: (reason: string) => void = () => {};
    const poolDown = new Promise<string>((resolve) => (shutDown = resolve));
    const events: WorkerEvents = new EventEmitter();
    events.on("pool:create", ({ workerPool }) => o.onPool(workerPool));
    events.on("pool:gracefulShutdown", () => {
      // A task that never returns (a query on a connection that never answers) would hold the shutdown for ever.
      setTimeout(() => shutDown(`the job runner's pool did not finish shutting down in ${SHUTDOWN_BOUND_MS / 1000} s`), SHUTDOWN_BOUND_MS).unref();
    });
    events.on("pool:gracefulShutdown:complete", () => shutDown("the job runner's pool shut down"));
    events.on("pool:gracefulShutdown:error", ({ error }) => shutDown(`the job runner's pool shut down: ${asError(error).message}`));
    events.on("pool:fatalError", ({ error, action }) => o.log.warn({ err: asError(error), action }, "job runner could not record an outcome; its pool stops"));
    let runner: Runner;
    try {
      runner = await run({
        pgPool,
        concurrency: o.concurrency,
        pollInterval: o.pollMs,
        noHandleSignals: true,
        // Batched completion is flushed at shutdown; graphile's unbatched default
        // (-1) lets the pool close before the last completion is written, and
        // the finished job would run again.
        preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
        logger: o.logger,
        events,
        taskList: o.taskList,
        parsedCronItems: o.cronItems,
      });
    } catch (e) {
      await endPool(pgPool);
      throw e;
    }
    const settled = runner.promise.then(
      () => "the job runner exited",
      (e) => asError(e).message,
    );
    // The pool's shutdown is final once its tasks returned; its runner gets a short while to settle on its own.
    const stalled = poolDown.then((reason) => Promise.race([settled, Bun.sleep(SETTLE_MS).then(() => reason)]));
    return new GraphileRun(runner, pgPool, Promise.race([settled, stalled]));
  }

  /** Stops the runner (cron included) if it still runs, and ends its connections. Safe to call more than once. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await Promise.race([this.runner.stop().catch(() => undefined), Bun.sleep(SETTLE_MS)]);
    await endPool(this.pgPool);
  }
}

/** Ends a pool, bounded: a client still checked out (a query on a stalled connection) is not waited for. */
async function endPool(pool: pg.Pool): Promise<void> {
  await Promise.race([pool.end().catch(() => undefined), Bun.sleep(SETTLE_MS)]);
}
