import { eq } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { newId } from "../../domain/ids";
import { parseInput } from "../../domain/validation";
import { LATEST_VERSION } from "../../domain/versions";
import { fieldsOf, recordAudit } from "../audit";
import type { Origin, ServiceContext } from "../context";
import { refuseFreeMail } from "../workspaces/free-mail";
import { checkPassword, hashPassword, verifyPassword } from "./password";
import { membershipsOf, openSession, opened } from "./sessions";
import { LogInInput, type OpenedSession, SignUpInput } from "./shapes";
import { checkThrottle, clearAccount, recordFailure } from "./throttle";
import { issueVerification } from "./verify";

/**
 * A workspace and its first admin, a person with a password, in one
 * transaction; the person is logged in at once. The new workspace is pinned
 * to the newest API version. A verification link is mailed when outgoing
 * mail is configured (otherwise an operator verifies: `user:verify`).
 * The new workspace's audit log starts with its creation and the sign-up.
 */
export async function signUp(ctx: ServiceContext, raw: unknown, opts: { origin?: Origin } = {}): Promise<OpenedSession & { verificationMailed: boolean }> {
  const input = parseInput(SignUpInput, raw);
  const email = input.email.toLowerCase();
  refuseFreeMail(email);
  checkPassword(input.password, email);
  const passwordHash = await hashPassword(input.password);
  const now = ctx.clock.now();
  const { users: u, workspaces: ws, memberships: m } = ctx.db.t;
  const result = await ctx.db.tx(async (w) => {
    const [taken] = await w.select({ id: u.id }).from(u).where(eq(u.email, email));
    if (taken) throw new AppError("conflict", "email: an account with this e-mail address exists; log in instead");
    const workspaceId = newId("workspace");
    const userId = newId("user");
    await w.insert(ws).values({ id: workspaceId, name: input.workspaceName, email, defaultVersion: LATEST_VERSION, features: [], createdAt: now, updatedAt: now });
    await w.insert(u).values({ id: userId, email, name: input.name, passwordHash, emailVerifiedAt: null, createdAt: now, updatedAt: now });
    await w.insert(m).values({ id: newId("membership"), workspaceId, userId, role: "admin", createdAt: now, updatedAt: now });
    const by = { userId, email, origin: opts.origin };
    await recordAudit(ctx, w, by, { workspaceId, action: "workspace.create", resourceType: "workspace", resourceId: workspaceId, fields: ["name", "email"] });
    await recordAudit(ctx, w, by, { workspaceId, action: "person.signUp", resourceType: "person", resourceId: userId, fields: fieldsOf(input) });
    const link = await issueVerification(ctx, w, email);
    return { session: await openSession(ctx, w, userId, workspaceId), link };
  });
  const verificationMailed = await result.link.send();
  return { ...(await opened(ctx, result.session)), verificationMailed };
}

/**
 * Log in with e-mail and password; failures are throttled per account and
 * per client address (and change nothing, so they are not audit events).
 * The session opens in the person's first workspace, where it is recorded.
 */
export async function logIn(ctx: ServiceContext, raw: unknown, opts: { address: string | null; origin?: Origin }): Promise<OpenedSession> {
  const input = parseInput(LogInInput, raw);
  const email = input.email.toLowerCase();
  await checkThrottle(ctx, email, opts.address);
  const u = ctx.db.t.users;
  const [user] = await ctx.db.read.select({ id: u.id, email: u.email, passwordHash: u.passwordHash }).from(u).where(eq(u.email, email));
  if (!(await verifyPassword(input.password, user?.passwordHash ?? null)) || !user) {
    await recordFailure(ctx, email, opts.address);
    throw new AppError("unauthorized", "email or password is wrong");
  }
  await clearAccount(ctx, email);
  const [first] = await membershipsOf(ctx, user.id);
  const session = await ctx.db.tx(async (w) => {
    const s = await openSession(ctx, w, user.id, first?.workspaceId ?? null);
    if (first) {
      const by = { userId: user.id, email: user.email, origin: opts.origin };
      await recordAudit(ctx, w, by, { workspaceId: first.workspaceId, action: "session.logIn", resourceType: "session", resourceId: s.id });
    }
    return s;
  });
  return opened(ctx, session);
}
