import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createGraphqlWebSocket } from "../graphql/ws";
import { testDialect } from "./helpers/database";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { type Instance, secondInstance } from "./helpers/instances";
import { createPipeline, ITEMS_CSV } from "./helpers/runs";

/** `"name";k=v;...` items of a RateLimit or RateLimit-Policy field, by policy name. */
function items(field: string | null): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const part of (field ?? "").split(/,\s*/).filter(Boolean)) {
    const [name, ...params] = part.split(";");
    out[JSON.parse(name as string)] = Object.fromEntries(params.map((p) => p.split("=") as [string, string]));
  }
  return out;
}

describe("request budget per API key", () => {
  let h: Harness;
  let ws: TestWorkspace;
  let other: TestWorkspace;
  beforeAll(async () => {
    h = await Harness.start({ startJobs: false, env: { RATE_LIMIT_REQUESTS: "3", RATE_LIMIT_UPLOAD_BYTES: "1000", RATE_LIMIT_WINDOW_SECONDS: "60" } });
    ws = await h.workspace();
    other = await h.workspace({ name: "Other" });
  }, 30_000);
  afterAll(() => h.close());

  test("REST: every answer carries the fields; above the budget 429 with Retry-After, until the window ends", async () => {
    for (let i = 2; i >= 0; i--) {
      const res = await h.api(ws, "GET", "/connections");
      expect(res.status).toBe(200);
      const policy = items(res.headers.get("ratelimit-policy"));
      expect(policy.requests).toEqual({ q: "3", w: "60" });
      expect(policy["upload-bytes"]).toEqual({ q: "1000", w: "60", qu: '"content-bytes"' });
      expect(items(res.headers.get("ratelimit")).requests).toEqual({ r: String(i), t: "60" });
    }
    const refused = await h.api(ws, "GET", "/connections");
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe("rate_limited");
    expect(refused.body.message).toContain("requests");
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(items(refused.headers.get("ratelimit")).requests).toEqual({ r: "0", t: "60" });
    // Another key has its own budget.
    expect((await h.api(other, "GET", "/connections")).status).toBe(200);
    h.clock.advance(30_000);
    const later = await h.api(ws, "GET", "/connections");
    expect(later.status).toBe(429);
    expect(later.headers.get("retry-after")).toBe("30");
    h.clock.advance(30_000);
    expect((await h.api(ws, "GET", "/connections")).status).toBe(200);
  });

  test("answers that fail for another reason carry the fields too", async () => {
    h.clock.advance(60_000);
    const rest = await h.api(other, "GET", "/pipelines/pipe_missing");
    expect(rest.status).toBe(404);
    expect(items(rest.headers.get("ratelimit")).requests?.r).toBe("2");
    const trpc = await h.request("GET", `/trpc/pipelines.get?input=${encodeURIComponent(JSON.stringify({ id: "pipe_missing" }))}`, { key: other.apiKey });
    expect(trpc.status).toBe(404);
    expect(items(trpc.headers.get("ratelimit")).requests?.r).toBe("1");
    const gql = await h.graphql(other.apiKey, `{ pipeline(id: "pipe_missing") { id } }`);
    expect(items(gql.headers.get("ratelimit")).requests?.r).toBe("0");
  });

  test("GraphQL and tRPC share the key's budget and answer 429 with the same fields", async () => {
    h.clock.advance(60_000);
    const q = "{ connections { data { id } } }";
    const g = await h.graphql(ws.apiKey, q);
    expect(g.status).toBe(200);
    expect(items(g.headers.get("ratelimit")).requests?.r).toBe("2");
    const t = await h.request("GET", "/trpc/connections.list", { key: ws.apiKey });
    expect(t.status).toBe(200);
    expect(items(t.headers.get("ratelimit")).requests?.r).toBe("1");
    expect((await h.api(ws, "GET", "/connections")).status).toBe(200);
    const g2 = await h.graphql(ws.apiKey, q);
    expect(g2.status).toBe(429);
    expect(g2.body.errors?.[0]?.extensions.error).toBe("rate_limited");
    expect(g2.headers.get("retry-after")).toBe("60");
    const t2 = await h.request("GET", "/trpc/connections.list", { key: ws.apiKey });
    expect(t2.status).toBe(429);
    expect(t2.body.error.data.error).toBe("rate_limited");
    expect(t2.headers.get("retry-after")).toBe("60");
    expect(items(t2.headers.get("ratelimit-policy")).requests?.q).toBe("3");
  });

});

describe("upload-byte budget per API key", () => {
  let h: Harness;
  let other: TestWorkspace;
  beforeAll(async () => {
    h = await Harness.start({ startJobs: false, env: { RATE_LIMIT_UPLOAD_BYTES: "1000" } });
    other = await h.workspace();
  }, 30_000);
  afterAll(() => h.close());

  test("uploaded bytes have their own budget", async () => {
    const post = (name: string) => {
      const body = JSON.stringify({ name: name.repeat(90), type: "SFTP" });
      return h.request("POST", "/connections", { key: other.apiKey, rawBody: body, headers: { "content-type": "application/json", "content-length": String(body.length) } });
    };
    const first = await post("x");
    expect(first.status).toBe(200);
    const left = Number(items(first.headers.get("ratelimit"))["upload-bytes"]?.r);
    expect(left).toBeLessThan(1000 - 90);
    for (let i = 0; i < 8 && left > 0; i++) await post(String(i));
    const refused = await post("y");
    expect(refused.status).toBe(429);
    expect(refused.body.message).toContain("uploaded bytes");
    expect(refused.headers.get("retry-after")).toBe("60");
    // Nothing was created by the refused call.
    const list = await h.api(other, "GET", "/connections");
    expect((Array.isArray(list.body) ? list.body : list.body.data).some((c: { name: string }) => c.name.startsWith("y"))).toBe(false);
  });

  test("a streamed upload without content-length counts its size once received", async () => {
    h.clock.advance(60_000);
    const p = await createPipeline(h, other);
    const form = `--b0\r\ncontent-disposition: form-data; name="file"; filename="items.csv"\r\ncontent-type: text/csv\r\n\r\n${ITEMS_CSV.repeat(12)}\r\n--b0--\r\n`;
    // Sent as a stream: no content-length to charge on admission.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(form));
        c.close();
      },
    });
    const contentType = "multipart/form-data; boundary=b0";
    const res = await h.service.http.handle(
      new Request(`http://localhost/pipelines/${p.pipeline.id}/runs`, {
        method: "POST",
        headers: { "x-api-key": other.apiKey, "service-version": "2026-05-25", "content-type": contentType },
        body,
        duplex: "half",
      } as RequestInit),
    );
    expect(res.status, await res.clone().text()).toBe(200);
    const next = await h.api(other, "GET", "/connections");
    expect(Number(items(next.headers.get("ratelimit"))["upload-bytes"]?.r)).toBe(1000 - ITEMS_CSV.length * 12);
  });
});

describe("failed logins per client address", () => {
  let h: Harness;
  let ws: TestWorkspace;
  let server: ReturnType<typeof Bun.serve>;
  beforeAll(async () => {
    h = await Harness.start({ startJobs: false, env: { RATE_LIMIT_AUTH_FAILURES: "3" } });
    ws = await h.workspace();
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", ...createGraphqlWebSocket(h.svc, { maxJsonBodyBytes: 1 << 20 }).serve((r) => h.service.http.handle(r)) });
  }, 30_000);
  afterAll(async () => {
    await server.stop(true);
    await h.close();
  });

  test("after 3 unknown keys the address is refused, even with a good key, until the window ends", async () => {
    const get = (key: string, path = "/connections") => fetch(`http://127.0.0.1:${server.port}${path}`, { headers: { "x-api-key": key } });
    for (let i = 0; i < 3; i++) expect((await get("fps_nope_nope")).status).toBe(401);
    const refused = await get(ws.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).not.toBeNull();
    expect(items(refused.headers.get("ratelimit-policy"))["failed-logins"]).toEqual({ q: "3", w: "60" });
    expect(((await refused.json()) as { error: string }).error).toBe("rate_limited");
    expect((await fetch(`http://127.0.0.1:${server.port}/trpc/connections.list`, { headers: { "x-api-key": ws.apiKey } })).status).toBe(429);
    h.clock.advance(60_000);
    expect((await get(ws.apiKey)).status).toBe(200);
  });
});

if (testDialect() === "pg") {
  /** A harness (no jobs) with a workspace, and two more instances on its database with `env`; stopped after the describe. */
  const twoInstances = (env: Record<string, string>) => {
    const t = {} as { h: Harness; ws: TestWorkspace; b: Instance; c: Instance };
    beforeAll(async () => {
      t.h = await Harness.start({ startJobs: false });
      t.ws = await t.h.workspace();
      [t.b, t.c] = await Promise.all([secondInstance(t.h, env), secondInstance(t.h, env)]);
    }, 60_000);
    afterAll(async () => {
      await Promise.all([t.b?.stop(), t.c?.stop()]);
      await t.h?.close();
    });
    return t;
  };

  describe("Postgres: two instances share one budget", () => {
    // A day-long window: both instances (real clocks) count in the same one.
    const t = twoInstances({ RATE_LIMIT_REQUESTS: "20", RATE_LIMIT_WINDOW_SECONDS: "86400", RATE_LIMIT_SYNC_MS: "20" });

    test("requests on one instance count on the other", async () => {
      const on = async (i: Instance) => {
        const res = await fetch(`${i.url}/connections`, { headers: { "x-api-key": t.ws.apiKey } });
        await res.arrayBuffer();
        return res.status;
      };
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push(await on(t.b));
      await Bun.sleep(300);
      for (let i = 0; i < 12; i++) statuses.push(await on(t.c));
      await Bun.sleep(300);
      statuses.push(await on(t.b));
      expect(statuses.filter((s) => s === 200).length).toBe(20);
      expect(statuses.slice(20)).toEqual([429, 429, 429, 429, 429]);
    }, 30_000);
  });

  describe("Postgres: failed logins on one instance refuse the address on the other", () => {
    const t = twoInstances({ RATE_LIMIT_AUTH_FAILURES: "3", RATE_LIMIT_WINDOW_SECONDS: "86400", RATE_LIMIT_SYNC_MS: "20" });

    test("the other instance learns the address's failures from the shared counts within a sync or two", async () => {
      const get = async (i: Instance, key: string) => {
        const res = await fetch(`${i.url}/connections`, { headers: { "x-api-key": key } });
        await res.arrayBuffer();
        return res;
      };
      // c is asked first, so that it already watches the budget when the failures happen on b.
      expect((await get(t.c, t.ws.apiKey)).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await get(t.b, "fps_nope_nope")).status).toBe(401);
      expect((await get(t.b, t.ws.apiKey)).status).toBe(429);
      // A request to c (still admitted or not) keeps it reading the shared counts; within a few syncs it refuses too.
      let refused: Response | null = null;
      for (let i = 0; i < 50 && !refused; i++) {
        const res = await get(t.c, t.ws.apiKey);
        if (res.status === 429) refused = res;
        else await Bun.sleep(20);
      }
      expect(refused?.status).toBe(429);
      expect(items(refused!.headers.get("ratelimit-policy"))["failed-logins"]).toEqual({ q: "3", w: "86400" });
      // The other workspace's key from another address would still pass; the address is what is refused here.
      expect(refused!.headers.get("retry-after")).not.toBeNull();
    }, 30_000);
  });
}
