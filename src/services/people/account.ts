import { and, desc, eq, gt, isNull, ne } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import { recordAudit } from "../audit";
import type { Actor, ServiceContext } from "../context";
import { recordAccountChange } from "./audit";
import { checkPassword, hashPassword, verifyPassword } from "./password";
import { hashOf } from "./secrets";
import { ChangePasswordInput, SessionIdInput, type SessionListItem } from "./shapes";
import { checkThrottle, clearAccount, recordFailure } from "./throttle";

/** A person acting through their own session: the session's actor and its token (the cookie). */
export interface OwnSession {
  actor: Actor;
  token: string;
  /** The client's address, for throttling wrong current passwords as failed log-ins are. */
  address?: string | null;
}

function personOf(s: OwnSession): string {
  if (!s.actor.userId) throw new AppError("forbidden", "this is for a person's session, not an API key");
  return s.actor.userId;
}

/**
 * A person changes their password: the current one proves it is them (a
 * wrong one counts as a failed log-in), the new one meets the same rule as
 * at sign-up. Every other session of the person ends; this one stays.
 */
export async function changePassword(ctx: ServiceContext, own: OwnSession, raw: unknown): Promise<{ changed: true; sessionsEnded: number }> {
  const userId = personOf(own);
  const input = parseInput(ChangePasswordInput, raw);
  const { users: u, sessions: s } = ctx.db.t;
  const [user] = await ctx.db.read.select({ email: u.email, passwordHash: u.passwordHash }).from(u).where(eq(u.id, userId));
  if (!user) throw new AppError("not_found", "this account no longer exists");
  await checkThrottle(ctx, user.email, own.address ?? null);
  if (!(await verifyPassword(input.currentPassword, user.passwordHash))) {
    await recordFailure(ctx, user.email, own.address ?? null);
    throw new AppError("invalid_input", "currentPassword: is wrong");
  }
  await clearAccount(ctx, user.email);
  try {
    checkPassword(input.newPassword, user.email);
  } catch (e) {
    throw e instanceof AppError ? new AppError(e.code, e.message.replace(/^password:/, "newPassword:")) : e;
  }
  const passwordHash = await hashPassword(input.newPassword);
  const now = ctx.clock.now();
  return ctx.db.tx(async (w) => {
    await w.update(u).set({ passwordHash, updatedAt: now }).where(eq(u.id, userId));
    const ended = await w
      .update(s)
      .set({ revokedAt: now, updatedAt: now })
      .where(and(eq(s.userId, userId), isNull(s.revokedAt), ne(s.tokenHash, hashOf(own.token))))
      .returning({ id: s.id });
    await recordAccountChange(ctx, w, own.actor, userId, { action: "person.changePassword", fields: ["password"] });
    return { changed: true as const, sessionsEnded: ended.length };
  });
}

/** The person's open sessions (not ended, not expired), newest first. */
export async function listSessions(ctx: ServiceContext, own: OwnSession): Promise<SessionListItem[]> {
  const userId = personOf(own);
  const s = ctx.db.t.sessions;
  const now = ctx.clock.now();
  const rows = await ctx.db.read
    .select()
    .from(s)
    .where(and(eq(s.userId, userId), isNull(s.revokedAt), gt(s.expiresAt, now)))
    .orderBy(desc(s.createdAt), desc(s.id));
  const current = hashOf(own.token);
  const idleMs = ctx.settings.sessions.idleMinutes * 60_000;
  return rows
    .filter((r) => now.getTime() - r.lastSeenAt.getTime() <= idleMs)
    .map((r) => ({ id: r.id, workspaceId: r.workspaceId, createdAt: r.createdAt, lastSeenAt: r.lastSeenAt, expiresAt: r.expiresAt, current: r.tokenHash === current }));
}

/**
 * Ends one of the person's own sessions (another device, or this one).
 * Recorded in the workspace that session worked in. Another person's
 * session is a 404, as an unknown one; ending an ended one changes nothing.
 */
export async function revokeSession(ctx: ServiceContext, own: OwnSession, raw: unknown): Promise<{ revoked: true }> {
  const userId = personOf(own);
  const { id } = parseInput(SessionIdInput, raw);
  const s = ctx.db.t.sessions;
  const now = ctx.clock.now();
  return ctx.db.tx(async (w) => {
    const [row] = await w.select({ id: s.id, workspaceId: s.workspaceId, revokedAt: s.revokedAt }).from(s).where(and(eq(s.id, id), eq(s.userId, userId)));
    if (!row) throw new AppError("not_found", `session '${id}' not found`);
    if (!row.revokedAt) {
      await w.update(s).set({ revokedAt: now, updatedAt: now }).where(eq(s.id, row.id));
      const workspaceId = row.workspaceId ?? own.actor.workspaceId;
      await recordAudit(ctx, w, own.actor, { workspaceId, action: "session.revoke", resourceType: "session", resourceId: row.id });
    }
    return { revoked: true as const };
  });
}
