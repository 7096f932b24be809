import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import postgres from "postgres";
import { LATEST_VERSION, LEGACY_VERSION } from "../src/domain/versions";
import { authenticate } from "../src/services/keys/authenticate";
import { EXTERNAL_CHECK_MS, KeyCache, keyCacheOf } from "../src/services/keys/cache";
import { createKey } from "../src/services/keys/create-key";
import { revokeKey } from "../src/services/keys/revoke-key";
import { setDefaultVersion, setFeature } from "../src/services/workspaces/update-workspace";
import { testDialect } from "./helpers/database";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { type Instance, secondInstance, within } from "./helpers/instances";

/**
 * API key lookups are cached (src/services/keys/cache.ts); a revoked key, a
 * changed role and a changed or deleted workspace must still be refused or
 * seen by every instance within one second. Instances here use a 60 s cache
 * lifetime where a test proves a notification path, so that only the
 * notification can explain the refusal.
 */
const LONG_TTL = { KEY_CACHE_TTL_MS: "60000" };
const ROOT = new URL("..", import.meta.url).pathname;

async function status(h: Harness, key: string, path = "/pipelines") {
  return (await h.request("GET", path, { key })).status;
}

describe("the cache itself", () => {
  test("an entry lives ttl from the moment its read began, then is read again", () => {
    let now = 1000;
    const cache = new KeyCache(100, undefined, () => now);
    const row = { id: "k", name: "k", secretHash: "h", role: "member", revokedAt: null, lastUsedAt: null, workspaceId: "w", features: [], defaultVersion: null };
    const ticket = cache.ticket();
    now += 30; // the read took 30 ms
    cache.store("L", row, ticket);
    now = 1099;
    expect(cache.get("L")).toBe(row);
    now = 1100;
    expect(cache.get("L")).toBeUndefined();
  });

  test("a read that began before a clear is not kept: the old row cannot come back", () => {
    const cache = new KeyCache(60_000);
    const row = { id: "k", name: "k", secretHash: "h", role: "member", revokedAt: null, lastUsedAt: null, workspaceId: "w", features: [], defaultVersion: null };
    const ticket = cache.ticket();
    cache.clear(); // a revocation lands while the lookup is in flight
    cache.store("L", row, ticket);
    expect(cache.get("L")).toBeUndefined();
  });

  test("a change of the database's external version (another process committed) empties it, seen within 50 ms", () => {
    let version = 1;
    let now = 0;
    const cache = new KeyCache(60_000, () => version, () => now);
    const row = { id: "k", name: "k", secretHash: "h", role: "member", revokedAt: null, lastUsedAt: null, workspaceId: "w", features: [], defaultVersion: null };
    cache.get("L");
    cache.store("L", row, cache.ticket());
    expect(cache.get("L")).toBe(row);
    version = 2;
    now = EXTERNAL_CHECK_MS - 1;
    expect(cache.get("L")).toBe(row);
    now = EXTERNAL_CHECK_MS;
    expect(cache.get("L")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test("ttl 0 keeps nothing", () => {
    const cache = new KeyCache(0);
    cache.store("L", { id: "k", name: "k", secretHash: "h", role: "member", revokedAt: null, lastUsedAt: null, workspaceId: "w", features: [], defaultVersion: null }, cache.ticket());
    expect(cache.get("L")).toBeUndefined();
  });
});

describe("one instance: changes through the service are seen by the next request", () => {
  let h: Harness;
  let ws: TestWorkspace;
  beforeAll(async () => {
    h = await Harness.start({ startJobs: false, env: LONG_TTL });
    ws = await h.workspace();
  });
  afterAll(() => h.close());

  test("a cached key serves requests without reading the key again", async () => {
    expect(await status(h, ws.apiKey)).toBe(200);
    expect(keyCacheOf(h.svc.db).size).toBeGreaterThan(0);
    // A forged secret with the same lookup part is refused from the cache as from the database.
    const forged = `${ws.apiKey.slice(0, -4)}AAAA`;
    expect((await h.request("GET", "/pipelines", { key: forged })).body).toEqual({
      message: "x-api-key: not a valid API key",
      statusCode: 401,
      error: "unauthorized",
      requestId: expect.any(String),
    });
  });

  test("revoking a key: refused by the next request, on every surface", async () => {
    const key = await createKey(h.svc, { workspaceId: ws.workspaceId, name: "soon revoked" });
    expect(await status(h, key.apiKey)).toBe(200);
    expect((await h.graphql(key.apiKey, "{ pipelines { pagination { total } } }")).status).toBe(200);
    await revokeKey(h.svc, { keyId: key.id });
    const rest = await h.request("GET", "/pipelines", { key: key.apiKey });
    expect(rest.status).toBe(401);
    expect(rest.body).toEqual({ message: "x-api-key: this API key has been revoked", statusCode: 401, error: "unauthorized", requestId: expect.any(String) });
    expect((await h.graphql(key.apiKey, "{ pipelines { pagination { total } } }")).status).toBe(401);
    const trpc = await h.request("GET", "/trpc/pipelines.list", { key: key.apiKey });
    expect(trpc.status).toBe(401);
  });

  test("a workspace's features and default version: seen by the next request", async () => {
    expect((await authenticate(h.svc, { apiKey: ws.apiKey })).features).not.toContain("aggregated-mappings");
    await setFeature(h.svc, { workspaceId: ws.workspaceId, feature: "aggregated-mappings", enabled: true });
    expect((await authenticate(h.svc, { apiKey: ws.apiKey })).features).toContain("aggregated-mappings");
    await setDefaultVersion(h.svc, { workspaceId: ws.workspaceId, version: LEGACY_VERSION });
    expect((await h.request("GET", "/pipelines", { key: ws.apiKey })).headers.get("service-version")).toBe(LEGACY_VERSION);
    await setDefaultVersion(h.svc, { workspaceId: ws.workspaceId, version: LATEST_VERSION });
    expect((await h.request("GET", "/pipelines", { key: ws.apiKey })).headers.get("service-version")).toBe(LATEST_VERSION);
  });

  test("a changed role and a deleted workspace: any committed write to keys or workspaces empties the cache", async () => {
    const other = await h.workspace({ name: "Doomed" });
    const key = await createKey(h.svc, { workspaceId: other.workspaceId, role: "admin", name: "admin" });
    expect((await authenticate(h.svc, { apiKey: key.apiKey })).role).toBe("admin");
    const k = h.svc.db.t.apiKeys;
    await h.svc.db.tx((w) => w.update(k).set({ role: "member" }).where(eq(k.id, key.id)));
    expect((await authenticate(h.svc, { apiKey: key.apiKey })).role).toBe("member");
    expect(await status(h, other.apiKey)).toBe(200);
    const wsTable = h.svc.db.t.workspaces;
    await h.svc.db.tx((w) => w.delete(wsTable).where(eq(wsTable.id, other.workspaceId)));
    expect(await status(h, other.apiKey)).toBe(401);
    expect(await status(h, key.apiKey)).toBe(401);
  });
});

if (testDialect() === "sqlite") {
  describe("SQLite: the admin CLI is another process on the same file", () => {
    let h: Harness;
    let ws: TestWorkspace;
    beforeAll(async () => {
      h = await Harness.start({ startJobs: false, env: LONG_TTL });
      ws = await h.workspace();
    });
    afterAll(() => h.close());

    test("key:revoke in the CLI: the running service refuses the key within 50 ms", async () => {
      const key = await createKey(h.svc, { workspaceId: ws.workspaceId, name: "ci" });
      expect(await status(h, key.apiKey)).toBe(200);
      const cli = Bun.spawn([process.execPath, "src/cli.ts", "key:revoke", "--key", key.id], { cwd: ROOT, env: { ...process.env, ...h.childEnv() }, stdout: "pipe", stderr: "pipe" });
      expect(await cli.exited).toBe(0);
      expect(await within(EXTERNAL_CHECK_MS + 200, async () => (await status(h, key.apiKey)) === 401)).toBeLessThan(EXTERNAL_CHECK_MS + 200);
      expect(await status(h, ws.apiKey)).toBe(200);
    }, 30_000);
  });
}

if (testDialect() === "pg") {
  describe("Postgres: two instances on one database", () => {
    let a: Harness;
    let ws: TestWorkspace;
    let b: Instance;

    beforeAll(async () => {
      a = await Harness.start({ startJobs: false, env: LONG_TTL });
      ws = await a.workspace();
      b = await secondInstance(a, LONG_TTL);
    }, 60_000);
    afterAll(async () => {
      await b?.stop();
      await a.close();
    });

    const onB = async (key: string) => {
      const res = await fetch(`${b.url}/pipelines`, { headers: { "x-api-key": key } });
      await res.arrayBuffer();
      return res;
    };

    test("a key revoked on one instance is refused by the other within one second", async () => {
      const key = await createKey(a.svc, { workspaceId: ws.workspaceId, name: "shared" });
      for (let i = 0; i < 3; i++) expect((await onB(key.apiKey)).status).toBe(200);
      await revokeKey(a.svc, { keyId: key.id });
      const ms = await within(1000, async () => (await onB(key.apiKey)).status === 401);
      expect(ms).toBeLessThan(1000);
      expect((await onB(ws.apiKey)).status).toBe(200);
    }, 30_000);

    test("a workspace changed on one instance: the other applies it within one second", async () => {
      expect((await onB(ws.apiKey)).status).toBe(200);
      await setDefaultVersion(a.svc, { workspaceId: ws.workspaceId, version: LEGACY_VERSION });
      await within(1000, async () => (await onB(ws.apiKey)).headers.get("service-version") === LEGACY_VERSION);
      await setDefaultVersion(a.svc, { workspaceId: ws.workspaceId, version: LATEST_VERSION });
      await within(1000, async () => (await onB(ws.apiKey)).headers.get("service-version") === LATEST_VERSION);
    }, 30_000);

    test("a workspace deleted on one instance: its keys are refused by the other within one second", async () => {
      const doomed = await a.workspace({ name: "Doomed" });
      expect((await onB(doomed.apiKey)).status).toBe(200);
      const t = a.svc.db.t.workspaces;
      await a.svc.db.tx((w) => w.delete(t).where(eq(t.id, doomed.workspaceId)));
      await within(1000, async () => (await onB(doomed.apiKey)).status === 401);
    }, 30_000);

    test("a change no instance announces (plain SQL): refused once the 1 s lifetime has passed", async () => {
      const h = await Harness.start({ startJobs: false }); // the default lifetime, 1 s
      try {
        const other = await h.workspace({ name: "Quiet" });
        expect(await status(h, other.apiKey)).toBe(200);
        const sql = postgres(h.childEnv().DATABASE_URL!, { max: 1, onnotice: () => {} });
        await sql`update api_keys set revoked_at = now() where id = ${other.keyId}`;
        const revokedAt = performance.now();
        await sql.end();
        await Bun.sleep(Math.max(0, 1000 - (performance.now() - revokedAt)));
        expect(await status(h, other.apiKey)).toBe(401);
      } finally {
        await h.close();
      }
    }, 30_000);
  });
}
