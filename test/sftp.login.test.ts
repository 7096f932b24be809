import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import pino from "pino";
import { ipAllowed, LoginGuard } from "../src/services/sftp-accounts";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { type SftpLogin, sftpBatch } from "./helpers/sftp";

/**
 * Login policy of the hosted SFTP server: the per-address lockout (with
 * SFTP_MAX_LOGIN_FAILURES=3 here), the structured log line of every attempt,
 * and the whitelist matcher. The lockout state is the server's, so these
 * tests have a service of their own.
 */
// Each test drives real OpenSSH processes (and some start the service): more than the 5 s default.
setDefaultTimeout(60_000);
let h: Harness;
let port: number;
let ws: TestWorkspace;
const PASSWORD = "Tr0ub4dor&3-not-in-logs";
const WRONG = "wrong-guess-not-in-logs";
const LOCKOUT_SECONDS = 600;
let logs: Record<string, any>[] = [];

const login = (extra: Partial<SftpLogin> = {}): SftpLogin => ({ port, user: "lock-partner", password: PASSWORD, ...extra });
/** OpenSSH picks its source address: 127.0.0.2 is loopback too, and a different client address to the server. */
const from = (address: string) => ["-o", `BindAddress=${address}`];

async function attempt(password: string, source = "127.0.0.1") {
  const r = await sftpBatch(login({ password, extraArgs: from(source) }), ["pwd"]);
  return r.code === 0;
}

const loginLines = () => logs.filter((l) => l.event === "sftp.login");

beforeAll(async () => {
  h = await Harness.start({ env: { SFTP_MAX_LOGIN_FAILURES: "3", SFTP_LOCKOUT_SECONDS: String(LOCKOUT_SECONDS), SFTP_FAILURE_DELAY_MS: "100" } });
  h.svc.log = pino({ level: "debug" }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  port = await h.service.sftp.listen(0, "127.0.0.1");
  ws = await h.workspace();
  await h.ok(ws, "POST", "/connections", { name: "Lock partner", type: "SFTP", sftpUsername: "lock-partner", sftpPassword: PASSWORD });
});
afterAll(() => h.close());

describe("repeated failed logins from one address", () => {
  test("are slowed, then refused for SFTP_LOCKOUT_SECONDS even with the right password; other addresses are not affected", async () => {
    logs = [];
    expect(await attempt(PASSWORD)).toBe(true);
    for (let i = 0; i < 3; i++) expect(await attempt(WRONG)).toBe(false);
    // Locked: the right password no longer works from this address...
    expect(await attempt(PASSWORD)).toBe(false);
    // ...but does from another one.
    expect(await attempt(PASSWORD, "127.0.0.2")).toBe(true);

    const lines = loginLines();
    const failures = lines.filter((l) => l.reason === "bad_password");
    expect(failures.map((l) => l.failures)).toEqual([1, 2, 3]);
    expect(failures.map((l) => l.remoteAddress)).toEqual(["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
    expect(failures[2]!.lockedOut).toBe(true);
    const refused = lines.filter((l) => l.reason === "locked_out");
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0]).toMatchObject({ outcome: "rejected", remoteAddress: "127.0.0.1", retryAfterSeconds: LOCKOUT_SECONDS });

    // The lockout ends with its time (the service's clock).
    h.clock.advance(LOCKOUT_SECONDS * 1000 + 1);
    expect(await attempt(PASSWORD)).toBe(true);
  });

  test("each failure waits failures x SFTP_FAILURE_DELAY_MS before its answer", async () => {
    const guard = new LoginGuard({ maxFailures: 5, lockoutMs: 60_000, failureDelayMs: 100 }, () => 0);
    expect([1, 2, 3].map(() => guard.fail("203.0.113.9").delayMs)).toEqual([100, 200, 300]);
    // Over the wire: the third wrong password in a row takes at least 300 ms to be refused.
    h.clock.advance(LOCKOUT_SECONDS * 1000 + 1);
    await attempt(WRONG);
    await attempt(WRONG);
    const started = performance.now();
    expect(await attempt(WRONG)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(300);
    h.clock.advance(LOCKOUT_SECONDS * 1000 + 1);
  });

  test("a success clears the count; failures outside the window start a new one", () => {
    let now = 0;
    const guard = new LoginGuard({ maxFailures: 3, lockoutMs: 1000, failureDelayMs: 0 }, () => now);
    guard.fail("a");
    guard.fail("a");
    guard.succeed("a");
    expect(guard.fail("a").failures).toBe(1);
    now = 1000;
    expect(guard.fail("a").failures).toBe(1);
    guard.fail("a");
    expect(guard.fail("a").lockedNow).toBe(true);
    expect(guard.check("a")).toEqual({ locked: true, retryAfterMs: 1000 });
    now = 2000;
    expect(guard.check("a")).toEqual({ locked: false });
  });
});

describe("every login attempt is logged, without secrets", () => {
  test("accepted and rejected attempts, by reason, with the address and no password", async () => {
    logs = [];
    const key = await h.ok(ws, "POST", "/connections", { name: "Fenced", type: "SFTP", sftpUsername: "fenced-partner", sftpPassword: PASSWORD, ipWhitelist: ["10.1.0.0/16"] });
    expect(await attempt(PASSWORD)).toBe(true);
    expect(await sftpBatch(login({ user: "no-such-user" }), ["pwd"]).then((r) => r.code)).not.toBe(0);
    expect(await sftpBatch(login({ user: "fenced-partner" }), ["pwd"]).then((r) => r.code)).not.toBe(0);
    const lines = loginLines().filter((l) => l.method === "password");
    expect(lines.map((l) => [l.username, l.outcome, l.reason ?? null])).toEqual([
      ["lock-partner", "accepted", null],
      ["no-such-user", "rejected", "unknown_user"],
      ["fenced-partner", "rejected", "ip_not_allowed"],
    ]);
    expect(lines[2]).toMatchObject({ connectionId: key.id, workspaceId: ws.workspaceId, remoteAddress: "127.0.0.1" });
    const everything = JSON.stringify(logs);
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain(WRONG);
    h.clock.advance(LOCKOUT_SECONDS * 1000 + 1);
  });
});

describe("ipWhitelist matching", () => {
  test("addresses, CIDR ranges, IPv6, and IPv4-mapped IPv6 peers", () => {
    expect(ipAllowed([], "198.51.100.7")).toBe(true);
    expect(ipAllowed(["198.51.100.7"], "198.51.100.7")).toBe(true);
    expect(ipAllowed(["198.51.100.7"], "198.51.100.8")).toBe(false);
    expect(ipAllowed(["198.51.100.0/24"], "198.51.100.200")).toBe(true);
    expect(ipAllowed(["198.51.100.0/24"], "198.51.101.1")).toBe(false);
    // A dual-stack socket reports an IPv4 client as ::ffff:a.b.c.d.
    expect(ipAllowed(["198.51.100.0/24"], "::ffff:198.51.100.9")).toBe(true);
    expect(ipAllowed(["::ffff:198.51.100.9"], "198.51.100.9")).toBe(true);
    expect(ipAllowed(["::ffff:0:0/96"], "198.51.100.9")).toBe(true);
    expect(ipAllowed(["2001:db8::/32"], "2001:db8:1::5")).toBe(true);
    expect(ipAllowed(["2001:db8::/32"], "2001:db9::5")).toBe(false);
    expect(ipAllowed(["2001:db8::1"], "2001:0db8:0000::0001")).toBe(true);
    expect(ipAllowed(["10.0.0.0/8"], "not an address")).toBe(false);
  });
});
