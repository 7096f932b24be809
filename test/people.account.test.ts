import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AuditRecord } from "./helpers/audit";
import { Harness } from "./helpers/harness";
import { sessionCall, type SessionCallOptions } from "./helpers/sessions";

/**
 * What a person changes about their own account and an admin about a
 * member: roles, passwords, sessions. Each takes effect at once, is refused
 * clearly when it may not be made, and is in the audit log by the person.
 */

const NORA = { workspaceName: "Northwind", name: "Nora Ops", email: "nora@northwind-trading.com", password: "correct horse battery" };
const MAX = { email: "max@northwind-trading.com", name: "Max", password: "another good one" };

let h: Harness;
let nora = { id: "", cookie: "", key: "" };
let max = { id: "", cookie: "" };

const call = (path: string, opts: SessionCallOptions = {}) => sessionCall(h, path, opts);
const ok = async (path: string, opts: SessionCallOptions) => {
  const r = await call(path, opts);
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r;
};
async function log(query: string): Promise<AuditRecord[]> {
  const r = await h.request("GET", `/audit-events?limit=100${query}`, { key: nora.key, version: "2026-05-25" });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}
const logIn = (who: { email: string; password: string }, password = who.password) => call("account.logIn", { input: { email: who.email, password } });

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  const signed = await ok("account.signUp", { input: NORA });
  nora = { id: signed.body.result.data.session.person.id, cookie: signed.cookie!, key: "" };
  nora.key = (await ok("keys.create", { cookie: nora.cookie, input: { name: "reader", role: "admin" } })).body.result.data.apiKey;
  const inv = await ok("members.invite", { cookie: nora.cookie, input: { email: MAX.email, role: "member" } });
  const token = new URL(inv.body.result.data.url).searchParams.get("token")!;
  const joined = await ok("account.acceptInvite", { input: { token, name: MAX.name, password: MAX.password } });
  max = { id: joined.body.result.data.session.person.id, cookie: joined.cookie! };
});
afterAll(() => h.close());

describe("roles", () => {
  test("an admin changes a member's role; it holds from the next request; the change is recorded", async () => {
    expect((await call("keys.create", { cookie: max.cookie, input: { name: "mine" } })).status).toBe(403);
    const r = await ok("members.changeRole", { cookie: nora.cookie, input: { userId: max.id, role: "admin" } });
    expect(r.body.result.data).toMatchObject({ userId: max.id, email: MAX.email, role: "admin" });
    expect((await call("keys.create", { cookie: max.cookie, input: { name: "mine" } })).status).toBe(200);
    // The same role again changes nothing and records nothing.
    await ok("members.changeRole", { cookie: nora.cookie, input: { userId: max.id, role: "admin" } });
    const events = await log("&action=member.changeRole");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ resourceType: "member", resourceId: max.id, fields: ["role"], actor: { type: "person", id: nora.id, name: NORA.email } });
  });

  test("refused: by a member, for a stranger, a bad role, and the last admin made a member", async () => {
    await ok("members.changeRole", { cookie: max.cookie, input: { userId: nora.id, role: "member" } });
    const byMember = await call("members.changeRole", { cookie: nora.cookie, input: { userId: max.id, role: "member" } });
    expect(byMember.status).toBe(403);
    expect(byMember.body.error.message).toBe("changing roles needs the admin role");
    const last = await call("members.changeRole", { cookie: max.cookie, input: { userId: max.id, role: "member" } });
    expect(last.status).toBe(409);
    expect(last.body.error.message).toBe("role: the last admin of a workspace stays an admin");
    const stranger = await call("members.changeRole", { cookie: max.cookie, input: { userId: "user_nobody", role: "member" } });
    expect(stranger.status).toBe(404);
    const bad = await call("members.changeRole", { cookie: max.cookie, input: { userId: nora.id, role: "owner" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("role: must be one of admin, member");
    // Back as it was: Nora admin, Max member (Max's own change is recorded by Max).
    await ok("members.changeRole", { cookie: max.cookie, input: { userId: nora.id, role: "admin" } });
    await ok("members.changeRole", { cookie: nora.cookie, input: { userId: max.id, role: "member" } });
    expect((await log(`&action=member.changeRole&actor=${max.id}`)).map((e) => e.resourceId)).toEqual([nora.id, nora.id]);
    expect((await log("&action=member.changeRole")).length).toBe(4);
  });
});

describe("sessions and passwords", () => {
  test("a person lists their open sessions and ends another one; someone else's is a 404", async () => {
    const laptop = (await logIn(MAX)).cookie!;
    const list = await ok("account.sessions", { cookie: max.cookie, query: true });
    const sessions = list.body.result.data as { id: string; current: boolean }[];
    expect(sessions).toHaveLength(2);
    expect(sessions.filter((s) => s.current)).toHaveLength(1);
    const other = sessions.find((s) => !s.current)!;
    const foreign = await call("account.revokeSession", { cookie: nora.cookie, input: { id: other.id } });
    expect(foreign.status).toBe(404);
    expect((await call("account.me", { cookie: laptop, query: true })).status).toBe(200);
    await ok("account.revokeSession", { cookie: max.cookie, input: { id: other.id } });
    const refused = await call("account.me", { cookie: laptop, query: true });
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toBe("session: this session has ended; log in again");
    expect((await ok("account.sessions", { cookie: max.cookie, query: true })).body.result.data).toHaveLength(1);
    const [e] = await log("&action=session.revoke");
    expect(e).toMatchObject({ resourceType: "session", resourceId: other.id, actor: { type: "person", id: max.id } });
    // An API key has no sessions of its own.
    const byKey = await call("account.sessions", { key: nora.key, query: true });
    expect(byKey.status).toBe(403);
  });

  test("a password change needs the current one, meets the rule, and ends every other session", async () => {
    const phone = (await logIn(MAX)).cookie!;
    const wrong = await call("account.changePassword", { cookie: max.cookie, input: { currentPassword: "not it at all", newPassword: "a brand new secret" } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toBe("currentPassword: is wrong");
    const weak = await call("account.changePassword", { cookie: max.cookie, input: { currentPassword: MAX.password, newPassword: "short" } });
    expect(weak.status).toBe(400);
    expect(weak.body.error.message).toBe("newPassword: must be at least 10 characters");
    expect(await log("&action=person.changePassword")).toEqual([]);

    const done = await ok("account.changePassword", { cookie: max.cookie, input: { currentPassword: MAX.password, newPassword: "a brand new secret" } });
    expect(done.body.result.data).toEqual({ changed: true, sessionsEnded: 1 });
    expect((await call("account.me", { cookie: phone, query: true })).status).toBe(401);
    expect((await call("account.me", { cookie: max.cookie, query: true })).status).toBe(200);
    expect((await logIn(MAX)).status).toBe(401);
    expect((await logIn(MAX, "a brand new secret")).status).toBe(200);
    const [e] = await log("&action=person.changePassword");
    expect(e).toMatchObject({ resourceType: "person", resourceId: max.id, fields: ["password"], actor: { type: "person", id: max.id, name: MAX.email } });
    expect(JSON.stringify(e)).not.toContain("brand new");
  });

  test("wrong current passwords are throttled like failed log-ins", async () => {
    let last = 0;
    for (let i = 0; i < 6; i++) {
      last = (await call("account.changePassword", { cookie: nora.cookie, input: { currentPassword: `guess number ${i}`, newPassword: "whatever it is now" } })).status;
    }
    expect(last).toBe(429);
    expect((await logIn(NORA)).status).toBe(429);
  });
});
