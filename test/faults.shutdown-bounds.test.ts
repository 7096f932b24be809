import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database as BunSqlite } from "bun:sqlite";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { parseConfig } from "../src/config";
import { createLogger } from "../src/logger";
import { RateLimits } from "../src/services/rate-limits";
import { ManualClock } from "../src/domain/clock";
import { freshDatabase, type TestDatabase, testDialect } from "./helpers/database";
import { Harness } from "./helpers/harness";
import { TcpProxy } from "./helpers/tcp-proxy";

/**
 * Closing the service ends within a bound after its database was reset,
 * refused or stalled (docs/reliability.md, "Shutdown"): every close path that
 * waits on the database is bounded, and a postgres.js client whose connection
 * failed during a query ends in 1 s, not its former 5 s.
 */
const CLOSE_BOUND_MS = 4_000;

let proxy: TcpProxy | null = null;

beforeAll(async () => {
  if (testDialect() === "pg") {
    const admin = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await TcpProxy.start({ host: admin.hostname, port: Number(admin.port || 5432) });
  }
});

afterAll(async () => {
  await proxy?.close();
});

async function closeTimed(h: Harness): Promise<number> {
  const t0 = performance.now();
  await h.service.close();
  return performance.now() - t0;
}

interface LogLine {
  level: number;
  msg: string;
  unshared?: { budget: string; subjects: number; units: number }[];
}

/** Rate limits on their own database through the proxy, with a log that is kept. */
async function rateLimitsViaProxy(): Promise<{ rl: RateLimits; database: TestDatabase; lines: LogLine[] }> {
  const database = await freshDatabase(undefined, { via: (url) => proxy!.via(url) });
  const lines: LogLine[] = [];
  const log = createLogger("warn", { write: (line: string) => void lines.push(JSON.parse(line)) });
  const config = parseConfig({ DATA_DIR: "/tmp", ENCRYPTION_KEY: Buffer.alloc(32, 1).toString("base64"), PUBLIC_URL: "http://localhost:3000" });
  // A sync interval far longer than the test: nothing is shared before close.
  const rl = new RateLimits({ db: database.db, settings: { ...config.rateLimits, syncMs: 10_000 }, clock: new ManualClock(new Date()), log });
  // The first call of a window reads the shared count; the others count in process.
  for (let i = 0; i < 7; i++) expect((await rl.forKey("key_1", 0)).refusedBy).toBeNull();
  return { rl, database, lines };
}

async function sharedCount(database: TestDatabase): Promise<number | undefined> {
  const w = database.db.t.rateLimitWindows;
  const [row] = await database.db.read.select({ used: w.used }).from(w).where(eq(w.subject, "requests:key_1"));
  return row?.used;
}

if (testDialect() === "pg") {
  describe("Postgres reset or refused, then the service closes", () => {
    test("connections reset during the driver's type query: closing takes under 4 s, every time", async () => {
      for (let round = 0; round < 3; round++) {
        const h = await Harness.start({ dbVia: (url) => proxy!.via(url) });
        try {
          const ws = await h.workspace();
          const sprung = proxy!.resetOn("pg_catalog.pg_type");
          proxy!.reset();
          expect([200, 503]).toContain((await h.api(ws, "GET", "/pipelines")).status);
          await Promise.race([sprung, Bun.sleep(3_000)]);
          // Counts for the rate limits' last share, on a reconnected pool.
          for (let i = 0; i < 3; i++) await h.api(ws, "GET", "/pipelines");
          const ms = await closeTimed(h);
          expect(ms, `round ${round}`).toBeLessThan(CLOSE_BOUND_MS);
        } finally {
          proxy!.restore();
          await h.close();
        }
      }
    }, 90_000);

    test("connections refused and still refused: closing takes under 4 s, every time", async () => {
      for (let round = 0; round < 3; round++) {
        const h = await Harness.start({ dbVia: (url) => proxy!.via(url) });
        try {
          const ws = await h.workspace();
          for (let i = 0; i < 3; i++) expect((await h.api(ws, "GET", "/pipelines")).status).toBe(200);
          proxy!.refuse();
          expect((await h.api(ws, "GET", "/pipelines")).status).toBe(503);
          const ms = await closeTimed(h);
          expect(ms, `round ${round}`).toBeLessThan(CLOSE_BOUND_MS);
        } finally {
          proxy!.restore();
          await h.close();
        }
      }
    }, 90_000);
  });

  describe("the rate limits' last share of counts at close", () => {
    test("with the database answering, the counts are shared and nothing is reported lost", async () => {
      const { rl, database, lines } = await rateLimitsViaProxy();
      try {
        await rl.close();
        expect(await sharedCount(database)).toBe(7);
        expect(lines.filter((l) => l.msg.startsWith("rate limits"))).toEqual([]);
      } finally {
        await database.drop();
      }
    }, 30_000);

    test("against a refused database, close ends within its bound and names the counts it could not share", async () => {
      const { rl, database, lines } = await rateLimitsViaProxy();
      try {
        proxy!.refuse();
        const t0 = performance.now();
        await rl.close();
        expect(performance.now() - t0).toBeLessThan(2_500);
        const given = lines.find((l) => l.msg.includes("given up"));
        expect(given?.unshared).toEqual([{ budget: "requests", subjects: 1, units: 7 }]);
      } finally {
        proxy!.restore();
        await database.drop();
      }
    }, 30_000);

    test("against a database that stopped answering, close gives the share up after 2 s with a warning", async () => {
      const { rl, database, lines } = await rateLimitsViaProxy();
      try {
        proxy!.stall();
        const t0 = performance.now();
        await rl.close();
        const ms = performance.now() - t0;
        expect(ms).toBeGreaterThanOrEqual(1_900);
        expect(ms).toBeLessThan(2_500);
        const given = lines.find((l) => l.msg.includes("did not finish in time"));
        expect(given?.unshared).toEqual([{ budget: "requests", subjects: 1, units: 7 }]);
        // Closing the database ends the share that was given up (no statement is left waiting).
        const closing = performance.now();
        await database.db.close();
        expect(performance.now() - closing).toBeLessThan(2_000);
      } finally {
        proxy!.restore();
        await database.drop();
      }
    }, 30_000);
  });
} else {
  describe("SQLite", () => {
    test("closing the service while another connection holds the database locked ends within the busy timeout and a bound", async () => {
      const h = await Harness.start();
      const ws = await h.workspace();
      for (let i = 0; i < 3; i++) expect((await h.api(ws, "GET", "/pipelines")).status).toBe(200);
      const other = new BunSqlite(join(h.dataDir, "service.db"));
      other.exec("BEGIN EXCLUSIVE");
      try {
        const ms = await closeTimed(h);
        // The rate limits count in process on SQLite; what may wait is a write of the queue (busy_timeout: 5 s).
        expect(ms).toBeLessThan(6_000);
      } finally {
        other.exec("ROLLBACK");
        other.close();
        await h.close();
      }
    }, 30_000);
  });
}
