import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { verifyByOperator } from "../src/services/people";
import type { AuditRecord } from "./helpers/audit";
import { Harness } from "./helpers/harness";
import { sessionCall, type SessionCallOptions } from "./helpers/sessions";

/**
 * What people do on the dashboard goes into the audit log as API changes
 * do: sign-up, log-in and log-out, the workspace switcher, invitations,
 * removals, verification, and every API change made through a session. The
 * actor is the person (`type: person`, their id and e-mail), never a key.
 */

type Event = AuditRecord;

const NORA = { workspaceName: "Northwind", name: "Nora Ops", email: "nora@northwind-trading.com", password: "correct horse battery" };
const CARL = { workspaceName: "Contoso", name: "Carl", email: "carl@contoso-freight.com", password: "freight forwarding 9" };

let h: Harness;
let nora = { id: "", cookie: "", key: "" };

const call = (path: string, opts: SessionCallOptions = {}) => sessionCall(h, path, opts);

/** The workspace's log over REST with an admin key, newest first. */
async function log(key: string, query = ""): Promise<Event[]> {
  const r = await h.request("GET", `/audit-events?limit=100${query}`, { key, version: "2026-05-25" });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

const person = (p: { id: string }, email: string) => ({ type: "person", id: p.id, name: email });

beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
});
afterAll(() => h.close());

describe("people's actions in the audit log", () => {
  test("sign-up records the new workspace and the person, by the person, with the request id", async () => {
    const r = await call("account.signUp", { input: NORA, headers: { "x-request-id": "req-signup-1" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    nora = { id: r.body.result.data.session.person.id, cookie: r.cookie!, key: "" };
    expect(nora.id).toMatch(/^user_/);
    const key = await call("keys.create", { cookie: nora.cookie, input: { name: "audit reader", role: "admin" } });
    expect(key.status, JSON.stringify(key.body)).toBe(200);
    nora.key = key.body.result.data.apiKey;

    const events = await log(nora.key);
    expect(events.map((e) => e.action)).toEqual(["apiKey.create", "person.signUp", "workspace.create"]);
    for (const e of events) expect(e).toMatchObject({ actor: person(nora, NORA.email), surface: "trpc" });
    const [keyMade, signedUp, made] = events;
    expect(signedUp).toMatchObject({ resourceType: "person", resourceId: nora.id, fields: ["email", "name", "password", "workspaceName"], requestId: "req-signup-1" });
    expect(made).toMatchObject({ resourceType: "workspace", fields: ["name", "email"], requestId: "req-signup-1" });
    expect(keyMade!.resourceType).toBe("apiKey");
    // Never a value: not the password, not the key.
    expect(JSON.stringify(events)).not.toContain(NORA.password);
  });

  test("log in and log out are recorded against the session; a failed log-in or a second log-out records nothing", async () => {
    const before = (await log(nora.key)).length;
    const bad = await call("account.logIn", { input: { email: NORA.email, password: "not the password" } });
    expect(bad.status).toBe(401);
    expect((await log(nora.key)).length).toBe(before);

    const r = await call("account.logIn", { input: { email: NORA.email, password: NORA.password }, headers: { "x-request-id": "req-login-1" } });
    expect(r.status).toBe(200);
    expect((await call("account.logOut", { cookie: r.cookie })).status).toBe(200);
    expect((await call("account.logOut", { cookie: r.cookie })).status).toBe(200);
    const events = await log(nora.key, "&resourceType=session");
    expect(events.map((e) => e.action)).toEqual(["session.logOut", "session.logIn"]);
    expect(events[0]!.resourceId).toBe(events[1]!.resourceId);
    expect(events[1]).toMatchObject({ actor: person(nora, NORA.email), requestId: "req-login-1", surface: "trpc" });
  });

  test("an API change made through a session is the person's, not a key's", async () => {
    const made = await call("schemas.create", { cookie: nora.cookie, input: { name: "Row", definition: { type: "object", properties: { a: { type: "string" } } } } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const [e] = await log(nora.key, `&resourceId=${made.body.result.data.id}`);
    expect(e).toMatchObject({ action: "schema.create", actor: person(nora, NORA.email), surface: "trpc" });
  });

  test("invitations (made, accepted, withdrawn) and a removal; a refused invitation records nothing", async () => {
    const inv = await call("members.invite", { cookie: nora.cookie, input: { email: "max@northwind-trading.com", role: "member" } });
    expect(inv.status, JSON.stringify(inv.body)).toBe(200);
    const invitationId = inv.body.result.data.invitation.id;
    const token = new URL(inv.body.result.data.url).searchParams.get("token")!;
    const accepted = await call("account.acceptInvite", { input: { token, name: "Max", password: "another good one" } });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const max = { id: accepted.body.result.data.session.person.id };

    const before = (await log(nora.key)).length;
    const twice = await call("members.invite", { cookie: nora.cookie, input: { email: "max@northwind-trading.com" } });
    expect(twice.status).toBe(409);
    expect((await log(nora.key)).length).toBe(before);

    const spare = await call("members.invite", { cookie: nora.cookie, input: { email: "zoe@northwind-trading.com", role: "admin" } });
    const spareId = spare.body.result.data.invitation.id;
    expect((await call("members.revokeInvite", { cookie: nora.cookie, input: { id: spareId } })).status).toBe(200);
    expect((await call("members.remove", { cookie: nora.cookie, input: { userId: max.id } })).status).toBe(200);

    const events = await log(nora.key, "&from=2000-01-01");
    const pick = (action: string) => events.filter((e) => e.action === action);
    expect(pick("invitation.create").map((e) => [e.resourceId, e.fields, e.actor.id])).toEqual([
      [spareId, ["email", "role"], nora.id],
      [invitationId, ["email", "role"], nora.id],
    ]);
    // Accepted by the person invited: a new account sets its name and password.
    expect(pick("invitation.accept")).toEqual([expect.objectContaining({ resourceId: invitationId, fields: ["name", "password"], actor: person(max, "max@northwind-trading.com") })]);
    expect(pick("invitation.revoke")).toEqual([expect.objectContaining({ resourceId: spareId, actor: person(nora, NORA.email) })]);
    expect(pick("member.remove")).toEqual([expect.objectContaining({ resourceType: "member", resourceId: max.id, actor: person(nora, NORA.email) })]);
    // The person's own records, by the `actor` filter.
    expect((await log(nora.key, `&actor=${max.id}`)).map((e) => e.action)).toEqual(["invitation.accept"]);
  });

  test("account changes go to each of the person's workspaces; session changes to the session's", async () => {
    const signed = await call("account.signUp", { input: CARL });
    const carl = { id: signed.body.result.data.session.person.id };
    const carlKey = (await call("keys.create", { cookie: signed.cookie, input: { name: "carl's reader", role: "admin" } })).body.result.data.apiKey as string;
    const contoso = signed.body.result.data.session.workspaceId as string;
    const inv = await call("members.invite", { cookie: nora.cookie, input: { email: CARL.email, role: "admin" } });
    const token = new URL(inv.body.result.data.url).searchParams.get("token")!;
    const joined = await call("account.acceptInvite", { input: { token, password: CARL.password } });
    expect(joined.status).toBe(200);
    const northwind = joined.body.result.data.session.workspaceId as string;
    expect(northwind).not.toBe(contoso);

    // An existing account joins: nothing of the account is set.
    const [accept] = await log(nora.key, `&action=invitation.accept&actor=${carl.id}`);
    expect(accept).toMatchObject({ fields: [], actor: person(carl, CARL.email) });

    const switched = await call("account.switchWorkspace", { cookie: joined.cookie, input: { workspaceId: contoso } });
    expect(switched.status).toBe(200);
    const [move] = await log(carlKey, "&action=session.switchWorkspace");
    expect(move).toMatchObject({ resourceType: "session", fields: ["workspaceId"], actor: person(carl, CARL.email) });
    expect(await log(nora.key, "&action=session.switchWorkspace")).toEqual([]);

    const resent = await call("account.resendVerification", { cookie: joined.cookie });
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    await verifyByOperator(h.svc, { email: CARL.email });
    const account = async (key: string) => (await log(key, `&resourceId=${carl.id}`)).map((e) => [e.action, e.actor.type, e.actor.id ?? null]);
    const both = [
      ["person.verifyEmail", "cli", null],
      ["person.resendVerification", "person", carl.id],
    ];
    expect(await account(nora.key)).toEqual(both);
    // Contoso's log starts with Carl's sign-up.
    expect(await account(carlKey)).toEqual([...both, ["person.signUp", "person", carl.id]]);
    // Verifying again changes nothing and records nothing.
    await verifyByOperator(h.svc, { email: CARL.email });
    expect(await log(carlKey, "&action=person.verifyEmail")).toHaveLength(1);
  });

  test("keys and the default API version changed on the dashboard are the person's changes", async () => {
    const made = await call("keys.create", { cookie: nora.cookie, input: { name: "short-lived", role: "member" } });
    const keyId = made.body.result.data.id;
    expect((await call("keys.revoke", { cookie: nora.cookie, input: { id: keyId } })).status).toBe(200);
    expect((await call("workspace.setDefaultVersion", { cookie: nora.cookie, input: { version: "2024-09-01" } })).status).toBe(200);
    const keyEvents = await log(nora.key, `&resourceId=${keyId}`);
    expect(keyEvents.map((e) => [e.action, e.actor])).toEqual([
      ["apiKey.revoke", person(nora, NORA.email)],
      ["apiKey.create", person(nora, NORA.email)],
    ]);
    const [version] = await log(nora.key, "&action=workspace.setVersion");
    expect(version).toMatchObject({ fields: ["defaultVersion"], actor: person(nora, NORA.email), surface: "trpc" });
  });

  test("GraphQL and tRPC show the same records with the person as the actor", async () => {
    const g = await h.graphql(nora.key, `{ auditEvents(action: "person.signUp") { data { action actor { type id name } } } }`);
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.auditEvents.data).toEqual([{ action: "person.signUp", actor: person(nora, NORA.email) }]);
    const t = await call("auditEvents.list", { cookie: nora.cookie, query: true, input: { action: "session.logIn" } });
    expect(t.status, JSON.stringify(t.body)).toBe(200);
    expect(t.body.result.data.data[0].actor).toEqual(person(nora, NORA.email));
  });
});
