import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHttpSender } from "../src/adapters/webhooks/http-sender";
import type { WebhookRequest } from "../src/adapters/webhooks/port";

/**
 * The HTTP sender on its own, against local servers: it connects to the
 * address it is given (not to what the URL's name resolves to), keeps the
 * name for Host and for TLS (SNI and certificate check), cuts the answer's
 * excerpt, and reports timeouts, refusals and aborts as data.
 */
const dir = mkdtempSync(join(tmpdir(), "fps-tls-"));
execFileSync("openssl", [
  "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
  "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
  "-subj", "/CN=receiver.example.test", "-addext", "subjectAltName=DNS:receiver.example.test",
], { stdio: "ignore" });
const cert = readFileSync(join(dir, "cert.pem"), "utf8");
const key = readFileSync(join(dir, "key.pem"), "utf8");

const sender = createHttpSender({ ca: cert });
let plain: ReturnType<typeof Bun.serve>;
let tls: ReturnType<typeof Bun.serve>;
const seen: { host: string | null; body: string; sig: string | null }[] = [];

beforeAll(() => {
  const fetch = async (req: Request) => {
    const path = new URL(req.url).pathname;
    seen.push({ host: req.headers.get("host"), body: await req.text(), sig: req.headers.get("webhook-signature") });
    if (path === "/slow") await Bun.sleep(1000);
    if (path === "/big") return new Response("y".repeat(100_000), { status: 200 });
    if (path === "/busy") return new Response("later", { status: 429, headers: { "retry-after": "30" } });
    return new Response("ok");
  };
  plain = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch });
  tls = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert, key }, fetch });
});

afterAll(() => {
  sender.close();
  plain.stop(true);
  tls.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

const request = (url: string, extra: Partial<WebhookRequest> = {}): WebhookRequest => ({
  url: new URL(url),
  address: { address: "127.0.0.1", family: 4 },
  headers: { "content-type": "application/json", "webhook-signature": "v1,abc" },
  body: '{"id":"evt_1"}',
  timeoutMs: 2000,
  excerptBytes: 1024,
  ...extra,
});

describe("the HTTP sender", () => {
  test("connects to the given address with the URL's name as Host; the name itself is never resolved", async () => {
    const res = await sender.send(request(`http://receiver.example.test:${plain.port}/in`));
    expect(res).toMatchObject({ ok: true, statusCode: 200, excerpt: "ok", retryAfter: null });
    expect(seen.at(-1)).toEqual({ host: `receiver.example.test:${plain.port}`, body: '{"id":"evt_1"}', sig: "v1,abc" });
  });

  test("HTTPS: the certificate is checked against the URL's name, not the address", async () => {
    const ok = await sender.send(request(`https://receiver.example.test:${tls.port}/in`));
    expect(ok).toMatchObject({ ok: true, statusCode: 200 });
    const wrong = await sender.send(request(`https://impostor.example.test:${tls.port}/in`));
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(wrong.error).toMatch(/altnames|certificate|hostname/i);
  });

  test("keeps only the first excerptBytes of an answer, and passes Retry-After on", async () => {
    const big = await sender.send(request(`http://receiver.example.test:${plain.port}/big`, { excerptBytes: 100 }));
    expect(big.ok && big.excerpt).toBe("y".repeat(100));
    const busy = await sender.send(request(`http://receiver.example.test:${plain.port}/busy`));
    expect(busy).toMatchObject({ ok: true, statusCode: 429, retryAfter: "30", excerpt: "later" });
  });

  test("a timeout, a refused connection and an abort are results, not exceptions", async () => {
    const slow = await sender.send(request(`http://receiver.example.test:${plain.port}/slow`, { timeoutMs: 200 }));
    expect(slow).toMatchObject({ ok: false, timedOut: true, aborted: false, error: "timed out after 200 ms" });
    if (!slow.ok) expect(slow.durationMs).toBeGreaterThanOrEqual(190);

    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const port = closed.port;
    closed.stop(true);
    const refused = await sender.send(request(`http://receiver.example.test:${port}/in`));
    expect(refused).toMatchObject({ ok: false, timedOut: false, aborted: false });
    if (!refused.ok) expect(refused.error).toMatch(/ECONNREFUSED|refused/i);

    const controller = new AbortController();
    const pending = sender.send(request(`http://receiver.example.test:${plain.port}/slow`, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toMatchObject({ ok: false, aborted: true });
  });
});
