import { afterAll, beforeAll, expect, test } from "bun:test";
import { VERIFY_TTL_MS } from "../src/services/people/verify";
import { Harness } from "./helpers/harness";
import { NotifyServers } from "./helpers/notify-servers";

/** With outgoing mail configured: verification and invitation links go by mail, and work once, until they expire. */
const ORIGIN = "http://localhost:3000";
let h: Harness;
let mail: NotifyServers;

beforeAll(async () => {
  mail = await NotifyServers.start();
  h = await Harness.start({ env: mail.env() });
});
afterAll(async () => {
  await h.close();
  await mail.close();
});

async function post(path: string, input: unknown, cookie?: string) {
  const r = await h.request("POST", `/trpc/${path}`, { headers: { origin: ORIGIN, ...(cookie ? { cookie: `fps_session=${cookie}` } : {}) }, body: input });
  const m = /fps_session=([^;]*)/.exec(r.headers.get("set-cookie") ?? "");
  return { ...r, cookie: m?.[1] ?? null };
}

const linkIn = (text: string, path: string) => {
  const m = new RegExp(`http://localhost:3000${path}\\?token=([A-Za-z0-9_-]+)`).exec(text);
  expect(m).not.toBeNull();
  return m![1]!;
};

test("the verification link is mailed, works once, and expires", async () => {
  const s = await post("account.signUp", { workspaceName: "Initech", name: "Ina", email: "ina@initech-parts.com", password: "staple remover 42" });
  expect(s.status).toBe(200);
  expect(s.body.result.data.verificationMailed).toBe(true);
  const sent = mail.mails.find((m) => m.to.includes("ina@initech-parts.com"))!;
  expect(sent.subject).toBe("Confirm your e-mail address");
  const token = linkIn(sent.text, "/verify");
  const ok = await post("account.verifyEmail", { token });
  expect(ok.body.result.data).toEqual({ email: "ina@initech-parts.com" });
  const me = await h.request("GET", "/trpc/account.me", { headers: { cookie: `fps_session=${s.cookie}` } });
  expect(me.body.result.data.person.emailVerified).toBe(true);
  const twice = await post("account.verifyEmail", { token });
  expect(twice.body.error.message).toBe("token: this link is not valid or has been used already");

  // A new link, left to expire.
  const other = await post("account.signUp", { workspaceName: "Hooli", name: "Hal", email: "hal@hooli-systems.com", password: "middle out 2026" });
  const late = linkIn(mail.mails.find((m) => m.to.includes("hal@hooli-systems.com"))!.text, "/verify");
  h.clock.advance(VERIFY_TTL_MS + 1000);
  const expired = await post("account.verifyEmail", { token: late });
  expect(expired.body.error.message).toBe("token: this link has expired; log in to get a new one");
  const again = await post("account.logIn", { email: "hal@hooli-systems.com", password: "middle out 2026" });
  const resent = await post("account.resendVerification", {}, again.cookie!);
  expect(resent.body.result.data).toEqual({ mailed: true });
  expect(other.status).toBe(200);
});

test("an invitation is mailed, not shown; the new member's address counts as verified", async () => {
  const admin = await post("account.logIn", { email: "ina@initech-parts.com", password: "staple remover 42" });
  const inv = await post("members.invite", { email: "milton@initech-parts.com", role: "member" }, admin.cookie!);
  expect(inv.body.result.data).toMatchObject({ mailed: true, url: null });
  const sent = mail.mails.find((m) => m.to.includes("milton@initech-parts.com"))!;
  expect(sent.subject).toBe("You are invited to Initech");
  const joined = await post("account.acceptInvite", { token: linkIn(sent.text, "/invite"), name: "Milton", password: "red stapler 99" });
  expect(joined.body.result.data.session).toMatchObject({ role: "member", person: { emailVerified: true } });
});
