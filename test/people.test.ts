import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { THROTTLE } from "../src/services/people/throttle";
import { authenticate } from "../src/services/keys/authenticate";
import { Harness } from "./helpers/harness";
import { createPipeline, ITEMS_CSV } from "./helpers/runs";
import { ORIGIN, sessionCall, type SessionCallOptions } from "./helpers/sessions";

let h: Harness;

beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.close();
});

const call = (path: string, opts: SessionCallOptions = {}) => sessionCall(h, path, opts);

const SIGNUP = { workspaceName: "Northwind", name: "Nora Ops", email: "nora@northwind-trading.com", password: "correct horse battery" };

describe("sign-up, log-in, sessions", () => {
  let cookie: string;

  test("sign-up creates a workspace and its first admin, pinned to the newest version, and logs in", async () => {
    const r = await call("account.signUp", { input: SIGNUP });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.setCookie).toContain("HttpOnly");
    expect(r.setCookie).toContain("SameSite=Lax");
    expect(r.setCookie).not.toContain("Secure");
    expect(r.body.result.data.session.role).toBe("admin");
    expect(r.body.result.data.session.person).toMatchObject({ email: "nora@northwind-trading.com", emailVerified: false });
    expect(r.body.result.data.verificationMailed).toBe(false);
    cookie = r.cookie!;
    const ws = await call("workspace.get", { cookie, query: true });
    expect(ws.body.result.data.defaultVersion).toBe("2026-05-25");
  });

  test("free-mail domains, weak passwords and a taken address are refused, naming the field, and create nothing", async () => {
    const free = await call("account.signUp", { input: { ...SIGNUP, email: "nora@gmail.com" } });
    expect(free.status).toBe(400);
    expect(free.body.error.message).toBe("email: 'gmail.com' is a personal e-mail provider; register with your company's e-mail domain");
    expect(free.setCookie).toBeNull();
    const weak = await call("account.signUp", { input: { ...SIGNUP, email: "x@acme-weak.com", password: "short" } });
    expect(weak.status).toBe(400);
    expect(weak.body.error.message).toBe("password: must be at least 10 characters");
    const same = await call("account.signUp", { input: { ...SIGNUP, email: "x@acme-weak.com", password: "aaaaaaaaaaaa" } });
    expect(same.body.error.message).toBe("password: must use at least 5 different characters");
    const taken = await call("account.signUp", { input: SIGNUP });
    expect(taken.status).toBe(409);
    const weakLogin = await call("account.logIn", { input: { email: "x@acme-weak.com", password: "short" } });
    expect(weakLogin.status).toBe(401);
  });

  test("the cookie works on tRPC and GraphQL; a cookie mutation needs our Origin", async () => {
    const me = await call("account.me", { cookie, query: true });
    expect(me.body.result.data.person.name).toBe("Nora Ops");
    const noOrigin = await call("keys.create", { cookie, origin: null, input: { name: "ci" } });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.error.message).toContain("origin:");
    const evil = await call("keys.create", { cookie, origin: "https://evil.example", input: { name: "ci" } });
    expect(evil.status).toBe(403);
    const made = await call("keys.create", { cookie, input: { name: "ci", role: "member" } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const apiKey = made.body.result.data.apiKey as string;
    const rest = await h.request("GET", "/pipelines", { key: apiKey, version: "2026-05-25" });
    expect(rest.status).toBe(200);
    const listed = await call("keys.list", { cookie, query: true });
    expect(listed.body.result.data.map((k: { name: string }) => k.name)).toEqual(["ci"]);
    expect(JSON.stringify(listed.body)).not.toContain(apiKey);
    const gql = await h.request("POST", "/graphql", { headers: { cookie: `fps_session=${cookie}`, origin: ORIGIN }, body: { query: "{ pipelines { data { id } } }" } });
    expect(gql.status, JSON.stringify(gql.body)).toBe(200);
    expect(gql.body.data.pipelines.data).toEqual([]);
    const gqlCsrf = await h.request("POST", "/graphql", { headers: { cookie: `fps_session=${cookie}` }, body: { query: "{ pipelines { data { id } } }" } });
    expect(gqlCsrf.status).toBe(403);
    // An API key is not a person: `me` says so.
    const byKey = await call("account.me", { key: apiKey, query: true });
    expect(byKey.status).toBe(403);
    const revoked = await call("keys.revoke", { cookie, input: { id: made.body.result.data.id } });
    expect(revoked.body.result.data.revokedAt).not.toBeNull();
    expect((await h.request("GET", "/pipelines", { key: apiKey, version: "2026-05-25" })).status).toBe(401);
  });

  test("log out ends the session on the server", async () => {
    const r = await call("account.logIn", { input: { email: "NORA@northwind-trading.com", password: SIGNUP.password } });
    expect(r.status).toBe(200);
    const second = r.cookie!;
    const out = await call("account.logOut", { cookie: second });
    expect(out.status).toBe(200);
    expect(out.setCookie).toContain("Max-Age=0");
    const after = await call("account.me", { cookie: second, query: true });
    expect(after.status).toBe(401);
    expect(after.body.error.message).toBe("session: this session has ended; log in again");
    // The other session is untouched.
    expect((await call("account.me", { cookie, query: true })).status).toBe(200);
  });

  test("sessions expire when idle and in absolute time", async () => {
    const r = await call("account.logIn", { input: { email: SIGNUP.email, password: SIGNUP.password } });
    const s = r.cookie!;
    h.clock.advance(119 * 60_000);
    expect((await call("account.me", { cookie: s, query: true })).status).toBe(200);
    h.clock.advance(121 * 60_000);
    const idle = await call("account.me", { cookie: s, query: true });
    expect(idle.body.error.message).toBe("session: this session has expired after being idle; log in again");
    const r2 = await call("account.logIn", { input: { email: SIGNUP.email, password: SIGNUP.password } });
    for (let i = 0; i < 85; i++) {
      h.clock.advance(2 * 3600_000 - 60_000);
      if ((await call("account.me", { cookie: r2.cookie, query: true })).status !== 200) break;
    }
    const late = await call("account.me", { cookie: r2.cookie, query: true });
    expect(late.body.error.message).toBe("session: this session has expired; log in again");
    cookie = (await call("account.logIn", { input: { email: SIGNUP.email, password: SIGNUP.password } })).cookie!;
  });

  test("failed log-ins are throttled per account, then refused even with the right password", async () => {
    for (let i = 0; i < THROTTLE.account; i++) {
      const bad = await call("account.logIn", { input: { email: SIGNUP.email, password: "wrong password!" } });
      expect(bad.status).toBe(401);
      expect(bad.body.error.message).toBe("email or password is wrong");
    }
    const locked = await call("account.logIn", { input: { email: SIGNUP.email, password: SIGNUP.password } });
    expect(locked.status).toBe(429);
    expect(locked.body.error.message).toContain("too many failed log-ins for this account");
    h.clock.advance(THROTTLE.lockMs + 1000);
    const ok = await call("account.logIn", { input: { email: SIGNUP.email, password: SIGNUP.password } });
    expect(ok.status).toBe(200);
    cookie = ok.cookie!;
  });

  test("the operator verifies an e-mail address where no mail is configured", async () => {
    const cli = Bun.spawnSync([process.execPath, "src/cli.ts", "user:verify", "--email", SIGNUP.email.toUpperCase()], { cwd: `${import.meta.dir}/..`, env: { ...process.env, ...h.childEnv() } });
    expect(cli.exitCode, cli.stderr.toString()).toBe(0);
    expect(JSON.parse(cli.stdout.toString()).email).toBe(SIGNUP.email);
    const unknown = Bun.spawnSync([process.execPath, "src/cli.ts", "user:verify", "--email", "nobody@northwind-trading.com"], { cwd: `${import.meta.dir}/..`, env: { ...process.env, ...h.childEnv() } });
    expect(unknown.exitCode).not.toBe(0);
    expect(unknown.stderr.toString()).toContain("user 'nobody@northwind-trading.com' not found");
    expect((await call("account.me", { cookie, query: true })).body.result.data.person.emailVerified).toBe(true);
    const bad = await call("account.verifyEmail", { input: { token: "nope" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe("token: this link is not valid or has been used already");
  });

  test("members: invite with a role, accept, roles enforced, removal takes effect at once", async () => {
    const inv = await call("members.invite", { cookie, input: { email: "max@northwind-trading.com", role: "member" } });
    expect(inv.status, JSON.stringify(inv.body)).toBe(200);
    expect(inv.body.result.data.mailed).toBe(false);
    const token = new URL(inv.body.result.data.url).searchParams.get("token")!;
    const accepted = await call("account.acceptInvite", { input: { token, name: "Max", password: "another good one" } });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.result.data.session.role).toBe("member");
    const maxCookie = accepted.cookie!;
    const again = await call("account.acceptInvite", { input: { token, name: "Max", password: "another good one" } });
    expect(again.status).toBe(400);
    const denied = await call("keys.create", { cookie: maxCookie, input: { name: "mine" } });
    expect(denied.status).toBe(403);
    expect(denied.body.error.message).toBe("creating API keys needs the admin role");
    expect((await call("members.invite", { cookie: maxCookie, input: { email: "z@northwind-trading.com" } })).status).toBe(403);
    const list = await call("members.list", { cookie, query: true });
    expect(list.body.result.data.members.map((m: { name: string; role: string }) => [m.name, m.role])).toEqual([["Nora Ops", "admin"], ["Max", "member"]]);
    const lastAdmin = await call("members.remove", { cookie, input: { userId: list.body.result.data.members[0].userId } });
    expect(lastAdmin.status).toBe(409);
    const removed = await call("members.remove", { cookie, input: { userId: list.body.result.data.members[1].userId } });
    expect(removed.status).toBe(200);
    const gone = await call("account.me", { cookie: maxCookie, query: true });
    expect(gone.status).toBe(401);
  });

  test("a person sees only their workspaces; the switcher moves between them", async () => {
    const other = await call("account.signUp", { input: { ...SIGNUP, workspaceName: "Contoso", email: "carl@contoso-freight.com" } });
    const carl = other.cookie!;
    const pipeline = await call("schemas.create", { cookie, input: { name: "Row", definition: { type: "object", properties: { a: { type: "string" } } } } });
    expect(pipeline.status, JSON.stringify(pipeline.body)).toBe(200);
    const id = pipeline.body.result.data.id;
    expect((await call("schemas.get", { cookie: carl, query: true, input: { id } })).status).toBe(404);
    // Carl is invited into Northwind as an admin: two workspaces, switchable.
    const inv = await call("members.invite", { cookie, input: { email: "carl@contoso-freight.com", role: "admin" } });
    const token = new URL(inv.body.result.data.url).searchParams.get("token")!;
    const wrong = await call("account.acceptInvite", { input: { token, password: "not his password" } });
    expect(wrong.status).toBe(401);
    const joined = await call("account.acceptInvite", { input: { token, password: SIGNUP.password } });
    expect(joined.body.result.data.session.workspaces.length).toBe(2);
    const carl2 = joined.cookie!;
    expect((await call("schemas.get", { cookie: carl2, query: true, input: { id } })).status).toBe(200);
    const contoso = joined.body.result.data.session.workspaces.find((w: { workspaceName: string }) => w.workspaceName === "Contoso").workspaceId;
    const switched = await call("account.switchWorkspace", { cookie: carl2, input: { workspaceId: contoso } });
    expect(switched.body.result.data.workspaceId).toBe(contoso);
    expect((await call("schemas.get", { cookie: carl2, query: true, input: { id } })).status).toBe(404);
    const foreign = await call("account.switchWorkspace", { cookie: carl, input: { workspaceId: "ws_nope" } });
    expect(foreign.status).toBe(404);
  });

  test("the file upload route takes the cookie with our Origin; other REST routes stay key-only", async () => {
    const made = await call("keys.create", { cookie, input: { name: "setup", role: "admin" } });
    const apiKey = made.body.result.data.apiKey as string;
    const actor = await authenticate(h.svc, { apiKey });
    const ws = { workspaceId: actor.workspaceId, apiKey, keyId: actor.keyId!, actor };
    const { pipeline } = await createPipeline(h, ws);
    const upload = (headers: Record<string, string>) => {
      const form = new FormData();
      form.append("file", new File([ITEMS_CSV], "items.csv", { type: "text/csv" }));
      return h.service.http.handle(new Request(`http://localhost/pipelines/${pipeline.id}/runs`, { method: "POST", headers, body: form }));
    };
    const ok = await upload({ cookie: `fps_session=${cookie}`, origin: ORIGIN });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { filename: string }).filename).toBe("items.csv");
    const csrf = await upload({ cookie: `fps_session=${cookie}`, origin: "https://evil.example" });
    expect(csrf.status).toBe(403);
    const rest = await h.request("GET", "/pipelines", { headers: { cookie: `fps_session=${cookie}` }, version: "2026-05-25" });
    expect(rest.status).toBe(401);
  });

  test("without a key or a cookie, only the public procedures answer", async () => {
    expect((await call("account.me", { query: true })).status).toBe(401);
    expect((await call("keys.list", { query: true })).status).toBe(401);
    expect((await call("account.logIn", { input: { email: "a@b.example", password: "whatever it is" } })).status).toBe(401);
    // A batch naming a public procedure and another: the public one answers, the other is refused on its own.
    const batch = await h.request("GET", `/trpc/account.session,runs.list?batch=1&input=${encodeURIComponent("{}")}`, { headers: { cookie: "fps_session=stale" } });
    expect(batch.status).toBe(207);
    expect(batch.body[0].result.data).toBeNull();
    expect(batch.body[1].error.message).toBe("session: not a valid session; log in again");
    const csrfLogin = await call("account.logIn", { origin: "https://evil.example", input: { email: SIGNUP.email, password: SIGNUP.password } });
    expect(csrfLogin.status).toBe(403);
  });
});
