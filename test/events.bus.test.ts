import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { type Database, openPostgres } from "../db/client";
import { createEventBus } from "../src/adapters/events";
import { createMemoryEventBus } from "../src/adapters/events/memory";
import type { EventBus, RunEvent } from "../src/adapters/events/port";
import { CHANNEL, createPostgresEventBus } from "../src/adapters/events/postgres";
import type { RunStatus } from "../src/domain/runs";
import { createLogger } from "../src/logger";
import { freshDatabase, type TestDatabase, testDialect } from "./helpers/database";
import { Reader } from "./helpers/events";

/**
 * The run-status event bus: filters by workspace (and run or pipeline),
 * bounded per subscriber, ended by a signal or return(); on Postgres an
 * event crosses from one instance to another through NOTIFY.
 */

const log = createLogger("silent");
let seq = 0;
function event(over: Partial<RunEvent> = {}): RunEvent {
  seq++;
  return {
    type: "run.updated",
    id: `evt_${seq}`,
    workspaceId: "ws_a",
    runId: "run_1",
    pipelineId: "pipe_1",
    status: "processing" as RunStatus,
    previousStatus: "pending",
    at: new Date(Date.UTC(2026, 10, 22, 10, 0, seq)).toISOString(),
    ...over,
  };
}

function busTests(name: string, make: () => Promise<EventBus & { subscribers?: number }>) {
  describe(name, () => {
    let bus: EventBus & { subscribers?: number };
    beforeAll(async () => {
      bus = await make();
    });
    afterAll(async () => {
      await bus.close();
    });

    test("a subscriber gets its workspace's events in order and nothing of another workspace", async () => {
      const ac = new AbortController();
      const mine = new Reader(bus.subscribe({ workspaceId: "ws_a" }, ac.signal));
      const a1 = event({ status: "processing" });
      await bus.publish(event({ workspaceId: "ws_b", runId: "run_b" }));
      await bus.publish(a1);
      await bus.publish(event({ workspaceId: "ws_b", runId: "run_b", status: "completed" }));
      const a2 = event({ runId: "run_2", status: "failed", previousStatus: "processing" });
      await bus.publish(a2);
      expect(await mine.take(2)).toEqual([a1, a2]);
      expect(await mine.quiet(100)).toBe(true);
      ac.abort();
    });

    test("runId and pipelineId narrow the events", async () => {
      const ac = new AbortController();
      const byRun = new Reader(bus.subscribe({ workspaceId: "ws_a", runId: "run_9" }, ac.signal));
      const byPipeline = new Reader(bus.subscribe({ workspaceId: "ws_a", pipelineId: "pipe_9" }, ac.signal));
      const both = new Reader(bus.subscribe({ workspaceId: "ws_a", runId: "run_9", pipelineId: "pipe_9" }, ac.signal));
      const other = event({ runId: "run_8", pipelineId: "pipe_8" });
      const samePipeline = event({ runId: "run_7", pipelineId: "pipe_9" });
      const target = event({ runId: "run_9", pipelineId: "pipe_9", status: "completed" });
      const foreign = event({ workspaceId: "ws_b", runId: "run_9", pipelineId: "pipe_9" });
      for (const e of [other, samePipeline, foreign, target]) await bus.publish(e);
      expect(await byRun.take(1)).toEqual([target]);
      expect(await byPipeline.take(2)).toEqual([samePipeline, target]);
      expect(await both.take(1)).toEqual([target]);
      ac.abort();
    });

    test("aborting the signal ends the iteration, also while a next() is waiting", async () => {
      const ac = new AbortController();
      const it = bus.subscribe({ workspaceId: "ws_a" }, ac.signal);
      const pending = it.next();
      ac.abort();
      expect(await pending).toEqual({ value: undefined, done: true });
      await bus.publish(event());
      expect(await it.next()).toEqual({ value: undefined, done: true });
      const already = bus.subscribe({ workspaceId: "ws_a" }, ac.signal);
      expect(await already.next()).toEqual({ value: undefined, done: true });
    });

    test("return() detaches the subscriber; for-await with break does the same", async () => {
      const before = bus.subscribers;
      const it = bus.subscribe({ workspaceId: "ws_a" });
      expect(bus.subscribers).toBe((before ?? 0) + 1);
      await it.return?.();
      expect(bus.subscribers).toBe(before);
      expect(await it.next()).toEqual({ value: undefined, done: true });

      const loop = (async () => {
        for await (const e of bus.subscribe({ workspaceId: "ws_a", runId: "run_loop" })) return e;
      })();
      const e = event({ runId: "run_loop" });
      // Publish until the loop's subscription is attached and has taken one.
      await Bun.sleep(10);
      await bus.publish(e);
      expect(await loop).toEqual(e);
      expect(bus.subscribers).toBe(before);
    });
  });
}

busTests("in process", async () => createMemoryEventBus());

describe("bounded buffer", () => {
  test("a subscriber that does not read keeps the newest events; the next one read says how many were lost", async () => {
    const bus = createMemoryEventBus({ bufferSize: 8 });
    const ac = new AbortController();
    const slow = new Reader(bus.subscribe({ workspaceId: "ws_a" }, ac.signal));
    const fast = new Reader(bus.subscribe({ workspaceId: "ws_a" }, ac.signal));
    const sent: RunEvent[] = [];
    for (let i = 0; i < 1000; i++) {
      const e = event({ runId: `run_${i}` });
      sent.push(e);
      await bus.publish(e);
      if (i % 4 === 3) expect(await fast.take(4)).toEqual(sent.slice(i - 3, i + 1));
    }
    const got = await slow.take(8);
    expect(got[0]).toEqual({ ...sent[992]!, missed: 992 });
    expect(got.slice(1)).toEqual(sent.slice(993));
    expect(await slow.quiet(50)).toBe(true);
    // Once reported, the count starts again.
    const next = event();
    await bus.publish(next);
    expect(await slow.take(1)).toEqual([next]);
    ac.abort();
    await bus.close();
  });

  test("close() ends every subscription", async () => {
    const bus = createMemoryEventBus();
    const it = bus.subscribe({ workspaceId: "ws_a" });
    const waiting = it.next();
    await bus.close();
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(bus.subscribers).toBe(0);
  });
});

describe("createEventBus on this test run's database", () => {
  let database: TestDatabase;
  let bus: EventBus;
  beforeAll(async () => {
    database = await freshDatabase();
    bus = await createEventBus({ db: database.db, log });
  });
  afterAll(async () => {
    await bus.close();
    await database.drop();
  });

  test(`delivers (${testDialect()})`, async () => {
    const ac = new AbortController();
    const it = new Reader(bus.subscribe({ workspaceId: "ws_a", runId: "run_factory" }, ac.signal));
    const e = event({ runId: "run_factory" });
    await bus.publish(e);
    expect(await it.take(1)).toEqual([e]);
    // Exactly once: on Postgres the instance's own NOTIFY comes back and is ignored.
    expect(await it.quiet(300)).toBe(true);
    ac.abort();
  });
});

if (testDialect() === "pg") {
  describe("Postgres: across instances", () => {
    let database: TestDatabase;
    let second: Database;
    let one: EventBus;
    let two: EventBus;
    beforeAll(async () => {
      database = await freshDatabase();
      // A second instance: its own Database handle and its own bus on the same database.
      second = await openPostgres(database.url!, { max: 2 });
      one = await createEventBus({ db: database.db, log });
      two = await createEventBus({ db: second, log });
    });
    afterAll(async () => {
      await one.close();
      await two.close();
      await second.close();
      await database.drop();
    });

    test("an event published by one instance reaches the other's subscribers, filtered by workspace", async () => {
      const ac = new AbortController();
      const remote = new Reader(two.subscribe({ workspaceId: "ws_a" }, ac.signal));
      const local = new Reader(one.subscribe({ workspaceId: "ws_a" }, ac.signal));
      const foreign = event({ workspaceId: "ws_b" });
      const e1 = event({ status: "processing" });
      const e2 = event({ status: "completed", previousStatus: "processing" });
      await one.publish(foreign);
      await one.publish(e1);
      await one.publish(e2);
      expect(await remote.take(2)).toEqual([e1, e2]);
      expect(await local.take(2)).toEqual([e1, e2]);
      expect(await remote.quiet(300)).toBe(true);
      expect(await local.quiet(300)).toBe(true);

      const back = event({ runId: "run_back" });
      await two.publish(back);
      expect(await local.take(1)).toEqual([back]);
      ac.abort();
    });

    test("a notification that is not a run event is ignored", async () => {
      const ac = new AbortController();
      const it = new Reader(two.subscribe({ workspaceId: "ws_a" }, ac.signal));
      const sql = postgres(database.url!, { max: 1, onnotice: () => {} });
      await sql.notify(CHANNEL, "not json");
      await sql.notify(CHANNEL, JSON.stringify({ origin: "elsewhere", event: { type: "run.updated", workspaceId: "ws_a" } }));
      await sql.notify(CHANNEL, JSON.stringify({ origin: "elsewhere", event: { ...event(), status: "exploded" } }));
      const good = event({ runId: "run_good" });
      await sql.notify(CHANNEL, JSON.stringify({ origin: "elsewhere", event: { ...good, missed: 5 } }));
      // A sender cannot claim losses on the receiver's behalf.
      expect(await it.take(1)).toEqual([good]);
      await sql.end();
      ac.abort();
    });

    test("the listener comes back after its connection is killed", async () => {
      const logged: string[] = [];
      const watchLog = createLogger("warn");
      const third = await createPostgresEventBus({
        url: database.url!,
        log: Object.assign(Object.create(watchLog), { warn: (_: unknown, msg: string) => logged.push(msg) }),
      });
      const ac = new AbortController();
      const it = new Reader(third.subscribe({ workspaceId: "ws_a" }, ac.signal));
      const admin = postgres(database.url!, { max: 1, onnotice: () => {} });
      const killed = await admin`select pg_terminate_backend(pid) as ok from pg_stat_activity
        where datname = current_database() and application_name = 'fps-events' and query ilike 'listen%' and pid <> pg_backend_pid()`;
      expect(killed.length).toBeGreaterThan(0);
      // Publish until the re-established LISTEN hears it; postgres.js reconnects by itself.
      let got: RunEvent[] = [];
      for (let i = 0; i < 50 && got.length === 0; i++) {
        await one.publish(event({ runId: `run_after_${i}` }));
        got = await it.take(1, 200).catch(() => []);
      }
      expect(got.length).toBe(1);
      expect(got[0]!.runId).toMatch(/^run_after_/);
      expect(logged).toContain("event bus listening again after a reconnect; events in between were lost");
      ac.abort();
      await admin.end();
      await third.close();
    });
  });
}
