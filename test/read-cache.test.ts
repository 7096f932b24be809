import { Database as BunSqlite } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import postgres from "postgres";
import { type Database, openSqlite } from "../db/client";
import { cachedRead, EXTERNAL_CHECK_MS, readCacheSpec } from "../db/read-cache";
import { jobs } from "../db/sqlite/schema";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { testDialect } from "./helpers/database";
import { type Instance, secondInstance, within } from "./helpers/instances";

/**
 * The SQLite read cache (db/read-cache.ts) behind GET /pipelines/{id} and
 * GET /connections: what it keeps must never differ from what the database
 * holds once a write has returned, whoever wrote.
 */
describe("read cache (SQLite connection)", () => {
  let dir: string;
  let db: Database;
  const ws = "ws_cache";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "fps-read-cache-"));
    db = openSqlite(join(dir, "service.db"));
    const now = new Date();
    await db.tx(async (w) => {
      await w.insert(db.t.workspaces).values({ id: ws, name: "Cache", email: "ops@cache-corp.com", features: [], createdAt: now, updatedAt: now } as never);
    });
  });
  afterAll(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const names = () => db.read.select({ name: db.t.workspaces.name }).from(db.t.workspaces).where(eq(db.t.workspaces.id, ws));
  const rename = (name: string) => db.tx(async (w) => void (await w.update(db.t.workspaces).set({ name }).where(eq(db.t.workspaces.id, ws))));

  test("a hit is the kept value; a commit to a table it depends on clears it", async () => {
    const cache = db.readCache(readCacheSpec<{ name: string }[]>("test.workspace", ["workspaces"]));
    let loads = 0;
    const read = () => cachedRead(cache, ws, async () => (loads++, await names()));
    expect((await read())[0]!.name).toBe("Cache");
    expect((await read())[0]!.name).toBe("Cache");
    expect(loads).toBe(1);
    await rename("Cache 2");
    expect((await read())[0]!.name).toBe("Cache 2");
    expect(loads).toBe(2);
  });

  test("a commit to an unrelated table keeps it; one to a table whose deletes cascade into it clears it", async () => {
    const cache = db.readCache(readCacheSpec<string>("test.pipelines", ["pipelines"]));
    const ticket = cache.ticket();
    cache.store("k", "v", ticket);
    await db.tx(async (w) => {
      await w.insert(jobs as never).values({ id: "job_1", name: "x", payload: {}, status: "pending", attempts: 0, maxAttempts: 1, runAt: new Date(), createdAt: new Date(), updatedAt: new Date() } as never);
    });
    expect(cache.get("k")).toBe("v");
    // pipelines -> workspaces (on delete cascade): a workspace change clears pipeline reads.
    await rename("Cache 3");
    expect(cache.get("k")).toBeUndefined();
  });

  test("bounded: the oldest entry goes past maxEntries or maxBytes (JSON text); a value larger than maxBytes is not kept", () => {
    const byCount = db.readCache(readCacheSpec<string>("test.count", ["workspaces"], { maxEntries: 2 }));
    for (const k of ["a", "b", "c"]) byCount.store(k, k, byCount.ticket());
    expect([byCount.get("a"), byCount.get("b"), byCount.get("c")]).toEqual([undefined, "b", "c"]);
    // An eight-character string is 10 characters of JSON (with its quotes): 25 bytes hold two.
    const byBytes = db.readCache(readCacheSpec<string>("test.bytes", ["workspaces"], { maxBytes: 25 }));
    for (const k of ["a", "b", "c"]) byBytes.store(k, "x".repeat(8), byBytes.ticket());
    expect(byBytes.size).toBe(2);
    expect(byBytes.get("a")).toBeUndefined();
    byBytes.store("big", "x".repeat(30), byBytes.ticket());
    expect(byBytes.get("big")).toBeUndefined();
    expect(byBytes.size).toBe(2);
    // Replacing a key counts its bytes once.
    byBytes.store("c", "y".repeat(8), byBytes.ticket());
    expect([byBytes.size, byBytes.get("b"), byBytes.get("c")]).toEqual([2, "x".repeat(8), "y".repeat(8)]);
  });

  test("kept values are frozen: a caller cannot change what the next one reads", async () => {
    const cache = db.readCache(readCacheSpec<{ name: string }[]>("test.frozen", ["workspaces"]));
    const v = await cachedRead(cache, ws, () => names());
    expect(Object.isFrozen(v) && Object.isFrozen(v[0])).toBe(true);
    expect(() => {
      (v[0] as { name: string }).name = "changed";
    }).toThrow();
  });

  test("a read made while a transaction is open (it may see uncommitted rows) is not kept", async () => {
    const cache = db.readCache(readCacheSpec<string>("test.intx", ["workspaces"]));
    let inside!: () => void;
    const opened = new Promise<void>((r) => (inside = r));
    let finish!: () => void;
    const tx = db.tx(async (w) => {
      await w.update(db.t.workspaces).set({ name: "uncommitted" }).where(eq(db.t.workspaces.id, ws));
      inside();
      await new Promise<void>((r) => (finish = r));
      throw new Error("roll back");
    });
    await opened;
    const seen = await cachedRead(cache, ws, async () => (await names())[0]!.name);
    expect(seen).toBe("uncommitted");
    finish();
    await expect(tx).rejects.toThrow("roll back");
    expect(cache.size).toBe(0);
    expect(await cachedRead(cache, ws, async () => (await names())[0]!.name)).toBe("Cache 3");
  });

  test("a load during which a transaction began, or a clear happened, is not kept", async () => {
    const cache = db.readCache(readCacheSpec<string>("test.during", ["workspaces"]));
    await cachedRead(cache, "a", async () => {
      await db.tx(async () => {});
      return "old";
    });
    expect(cache.get("a")).toBeUndefined();
    await cachedRead(cache, "b", async () => {
      const v = (await names())[0]!.name;
      await rename("Cache 4");
      return v;
    });
    expect(cache.get("b")).toBeUndefined();
  });

  test("a commit by another process (data_version) clears every cache within EXTERNAL_CHECK_MS", async () => {
    const cache = db.readCache(readCacheSpec<string>("test.external", ["workspaces"]));
    expect(await cachedRead(cache, ws, async () => (await names())[0]!.name)).toBe("Cache 4");
    const other = new BunSqlite(join(dir, "service.db"));
    other.exec("PRAGMA busy_timeout = 5000");
    other.query("update workspaces set name = 'by hand' where id = ?").run(ws);
    other.close();
    await Bun.sleep(EXTERNAL_CHECK_MS + 10);
    expect(await cachedRead(cache, ws, async () => (await names())[0]!.name)).toBe("by hand");
  });
});

/** Through the API, on both databases. */
describe(`cached reads stay true through the API (${testDialect()})`, () => {
  let h: Harness;
  let ws: TestWorkspace;
  beforeAll(async () => {
    h = await Harness.start();
    ws = await h.workspace();
  });
  afterAll(() => h.close());

  test("GET /pipelines/{id} shows a rename, a webhook's new name, an unlinked and a deleted webhook at once", async () => {
    const conn = await h.ok(ws, "POST", "/connections", { name: "Cache partner", type: "SFTP", useHostedSFTP: true });
    const schema = await h.ok(ws, "POST", "/schemas", { name: "Cache rows", definition: { type: "object", properties: { id: { type: "integer" } } } });
    const a = await h.ok(ws, "POST", "/webhooks", { name: "Alpha", url: "https://hooks.example.com/a" });
    const b = await h.ok(ws, "POST", "/webhooks", { name: "Beta", url: "https://hooks.example.com/b" });
    const p = await h.ok(ws, "POST", "/pipelines", { name: "Cached", clientId: conn.id, schemaId: schema.id, webhookIds: [a.id, b.id] });
    const get = () => h.ok(ws, "GET", `/pipelines/${p.id}`);
    expect((await get()).webhooks.map((w: { name: string }) => w.name)).toEqual(["Alpha", "Beta"]);
    expect((await get()).name).toBe("Cached");

    await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { name: "Cached 2" });
    expect((await get()).name).toBe("Cached 2");
    await h.ok(ws, "PATCH", `/webhooks/${a.id}`, { name: "Alpha 2", url: "https://hooks.example.com/a2" });
    expect((await get()).webhooks).toEqual([
      { id: a.id, name: "Alpha 2", url: "https://hooks.example.com/a2" },
      { id: b.id, name: "Beta", url: "https://hooks.example.com/b" },
    ]);
    expect((await h.api(ws, "DELETE", `/webhooks/${b.id}`)).status).toBe(200);
    expect((await get()).webhooks.map((w: { id: string }) => w.id)).toEqual([a.id]);
    await h.ok(ws, "PATCH", `/pipelines/${p.id}`, { webhookIds: [] });
    expect((await get()).webhooks).toBeUndefined();
    expect((await h.api(ws, "DELETE", `/pipelines/${p.id}`)).status).toBe(200);
    expect((await h.api(ws, "GET", `/pipelines/${p.id}`)).status).toBe(404);
    // Another workspace never reads it from the cache either.
    const other = await h.workspace({ name: "Other" });
    const q = await h.ok(ws, "POST", "/pipelines", { name: "Mine", clientId: conn.id, schemaId: schema.id });
    await h.ok(ws, "GET", `/pipelines/${q.id}`);
    expect((await h.api(other, "GET", `/pipelines/${q.id}`)).status).toBe(404);
  });

  test("GET /connections shows a new, a renamed, a re-served and a deleted connection at once", async () => {
    const w = await h.workspace({ name: "Lists" });
    const list = async () => (await h.ok(w, "GET", "/connections?limit=20")) as { id: string; name: string; sftpServer?: { host: string } }[];
    expect(await list()).toEqual([]);
    const a = await h.ok(w, "POST", "/connections", { name: "Hosted", type: "SFTP", useHostedSFTP: true });
    expect((await list()).map((c) => c.name)).toEqual(["Hosted"]);
    const b = await h.ok(w, "POST", "/connections", {
      name: "Customer",
      type: "SFTP",
      useHostedSFTP: false,
      sftpServer: { host: "sftp.customer-one.com", port: 22, rootDirectory: "/", inboundFolder: "/in", outboundFolder: "/out" },
      sftpUsername: "feed",
      sftpPassword: "first-secret",
    });
    expect((await list()).map((c) => c.name)).toEqual(["Customer", "Hosted"]);
    await h.ok(w, "PATCH", `/connections/${b.id}`, {
      name: "Customer 2",
      sftpServer: { host: "sftp.customer-two.com", port: 22, rootDirectory: "/", inboundFolder: "/in", outboundFolder: "/out" },
    });
    const after = await list();
    expect(after.map((c) => c.name)).toEqual(["Customer 2", "Hosted"]);
    expect(after[0]!.sftpServer!.host).toBe("sftp.customer-two.com");
    // The legacy version returns stored credentials in clear: never a kept reply.
    const legacy = async () => (await h.request("GET", "/clients?limit=20", { key: w.apiKey, version: "2024-09-01" })).body as Record<string, unknown>[];
    expect((await legacy()).find((c) => c.id === b.id)!.sftpPassword).toBe("first-secret");
    await h.ok(w, "PATCH", `/connections/${b.id}`, { name: "Customer 2", sftpPassword: "second-secret" });
    expect((await legacy()).find((c) => c.id === b.id)!.sftpPassword).toBe("second-secret");
    expect((await h.api(w, "DELETE", `/connections/${a.id}`)).status).toBe(200);
    expect((await list()).map((c) => c.name)).toEqual(["Customer 2"]);
    expect(await h.ok(ws, "GET", "/connections?limit=20&name=customer")).toEqual([]);
  });
});

/** Postgres: a second instance (its own process, a 60 s cache lifetime) sees the first one's writes by the NOTIFY sent with them. */
if (testDialect() === "pg") {
  describe("Postgres: cached reads on two instances", () => {
    let a: Harness;
    let ws: TestWorkspace;
    let b: Instance;

    beforeAll(async () => {
      a = await Harness.start({ startJobs: false });
      ws = await a.workspace();
      b = await secondInstance(a, { READ_CACHE_TTL_MS: "60000" });
    }, 60_000);
    afterAll(async () => {
      await b?.stop();
      await a.close();
    });

    const onB = async (path: string) => {
      const res = await fetch(`${b.url}${path}`, { headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25" } });
      return (await res.json()) as any;
    };

    test("a pipeline renamed and a connection added on one instance show on the other within one second", async () => {
      const conn = await a.ok(ws, "POST", "/connections", { name: "Shared partner", type: "SFTP", useHostedSFTP: true });
      const schema = await a.ok(ws, "POST", "/schemas", { name: "Shared rows", definition: { type: "object", properties: { id: { type: "integer" } } } });
      const p = await a.ok(ws, "POST", "/pipelines", { name: "Shared", clientId: conn.id, schemaId: schema.id });
      for (let i = 0; i < 3; i++) expect((await onB(`/pipelines/${p.id}`)).name).toBe("Shared");
      for (let i = 0; i < 3; i++) expect((await onB("/connections?limit=20")).map((c: { name: string }) => c.name)).toEqual(["Shared partner"]);
      await a.ok(ws, "PATCH", `/pipelines/${p.id}`, { name: "Shared 2" });
      expect(await within(1000, async () => (await onB(`/pipelines/${p.id}`)).name === "Shared 2")).toBeLessThan(1000);
      await a.ok(ws, "POST", "/connections", { name: "Second partner", type: "SFTP", useHostedSFTP: true });
      await within(1000, async () => (await onB("/connections?limit=20")).length === 2);
    }, 30_000);

    test("a change no instance announces (plain SQL) is read once the 1 s lifetime has passed", async () => {
      const conn = await a.ok(ws, "POST", "/connections", { name: "Quiet partner", type: "SFTP", useHostedSFTP: true });
      const schema = await a.ok(ws, "POST", "/schemas", { name: "Quiet rows", definition: { type: "object", properties: { id: { type: "integer" } } } });
      const p = await a.ok(ws, "POST", "/pipelines", { name: "Quiet", clientId: conn.id, schemaId: schema.id });
      expect((await a.ok(ws, "GET", `/pipelines/${p.id}`)).name).toBe("Quiet");
      const sql = postgres(a.childEnv().DATABASE_URL!, { max: 1, onnotice: () => {} });
      await sql`update pipelines set name = 'Quiet 2' where id = ${p.id}`;
      const changedAt = performance.now();
      await sql.end();
      await Bun.sleep(Math.max(0, 1000 - (performance.now() - changedAt)));
      expect((await a.ok(ws, "GET", `/pipelines/${p.id}`)).name).toBe("Quiet 2");
    }, 30_000);
  });
}
