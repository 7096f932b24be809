import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDialect } from "./helpers/database";
import { Harness } from "./helpers/harness";
import { TcpProxy } from "./helpers/tcp-proxy";

/** /livez and /readyz (docs/reliability.md): public, bounded, and naming each check. */
let h: Harness;
let proxy: TcpProxy | null = null;

const CHECKS = ["database", "storage", "jobs", "sftp", "smtp"];
const check = (body: any, name: string) => body.checks.find((c: any) => c.name === name);

beforeAll(async () => {
  if (testDialect() === "pg") {
    const admin = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await TcpProxy.start({ host: admin.hostname, port: Number(admin.port || 5432) });
  }
  h = await Harness.start({ dbVia: proxy ? (url) => proxy!.via(url) : undefined });
}, 60_000);

afterAll(async () => {
  proxy?.restore();
  await h.close();
  await proxy?.close();
}, 30_000);

describe("/livez and /readyz", () => {
  test("/livez answers 200 without a key", async () => {
    const res = await h.request("GET", "/livez");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await h.request("GET", "/healthz")).status).toBe(200);
  });

  test("/readyz is 503 while the listeners are down, naming them, with every check's status and time", async () => {
    const res = await h.request("GET", "/readyz");
    expect(res.status).toBe(503);
    expect(res.body.ok).toBe(false);
    expect(res.body.checks.map((c: any) => c.name)).toEqual(CHECKS);
    for (const c of res.body.checks) expect(typeof c.ms).toBe("number");
    expect(check(res.body, "database").status).toBe("ok");
    expect(check(res.body, "storage").status).toBe("ok");
    expect(check(res.body, "jobs").status).toBe("ok");
    expect(check(res.body, "sftp")).toMatchObject({ status: "fail", error: expect.stringContaining("not listening") });
    expect(check(res.body, "smtp")).toMatchObject({ status: "fail", error: expect.stringContaining("not listening") });
  });

  test("/readyz is 200 once everything is up, without a key", async () => {
    await h.service.sftp.listen(0, "127.0.0.1");
    await h.service.smtp.listen(0, "127.0.0.1");
    const res = await h.request("GET", "/readyz");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(res.body.checks.every((c: any) => c.status === "ok")).toBe(true);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  test("many probes at once share one round of checks and all answer", async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, () => h.request("GET", "/readyz")));
    expect(replies.every((r) => r.status === 200)).toBe(true);
  });

  if (testDialect() === "pg") {
    test("Postgres unreachable (connections stalled): 503 naming the database, within the bound", async () => {
      proxy!.stall();
      try {
        const t0 = performance.now();
        const res = await h.request("GET", "/readyz");
        const ms = performance.now() - t0;
        expect(res.status).toBe(503);
        expect(check(res.body, "database")).toMatchObject({ status: "fail", error: expect.stringContaining("no answer within") });
        expect(ms).toBeLessThan(5_000);
      } finally {
        proxy!.restore();
      }
      const again = await h.request("GET", "/readyz");
      expect(again.status, JSON.stringify(again.body)).toBe(200);
    }, 20_000);
  }

  test("the job queue stopped: 503 naming the jobs check", async () => {
    await h.svc.queue.stop();
    const res = await h.request("GET", "/readyz");
    expect(res.status).toBe(503);
    expect(check(res.body, "jobs")).toMatchObject({ status: "fail", error: "job runner stopped" });
    expect(check(res.body, "database").status).toBe("ok");
  });
});
