import { and, asc, eq, isNull } from "drizzle-orm";
import type { Writer } from "../../../db/client";
import { AppError } from "../../domain/errors";
import { newId } from "../../domain/ids";
import { isApiVersion } from "../../domain/versions";
import { recordAudit } from "../audit";
import type { Actor, Origin, ServiceContext } from "../context";
import { hashOf, newSecret } from "./secrets";
import type { MembershipView, OpenedSession, Role, SessionView } from "./shapes";

/** The cookie that carries a session token (HttpOnly, SameSite=Lax; Secure behind https). */
export const SESSION_COOKIE = "fps_session";

/** `lastSeenAt` (the idle clock) is written at most this often per session. */
const TOUCH_MS = 60_000;

export async function membershipsOf(ctx: ServiceContext, userId: string): Promise<MembershipView[]> {
  const { memberships: m, workspaces: ws } = ctx.db.t;
  const rows = await ctx.db.read
    .select({ workspaceId: m.workspaceId, workspaceName: ws.name, role: m.role })
    .from(m)
    .innerJoin(ws, eq(ws.id, m.workspaceId))
    .where(eq(m.userId, userId))
    .orderBy(asc(m.createdAt), asc(m.workspaceId));
  return rows.map((r) => ({ ...r, role: r.role as Role }));
}

/** Opens a session for a person in `workspaceId` (or their first workspace), inside the caller's transaction. */
export async function openSession(ctx: ServiceContext, w: Writer, userId: string, workspaceId: string | null): Promise<{ id: string; token: string; expiresAt: Date }> {
  const now = ctx.clock.now();
  const { token, hash } = newSecret();
  const expiresAt = new Date(now.getTime() + ctx.settings.sessions.maxHours * 3600_000);
  const id = newId("session");
  await w.insert(ctx.db.t.sessions).values({
    id,
    tokenHash: hash,
    userId,
    workspaceId,
    lastSeenAt: now,
    expiresAt,
    revokedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  return { id, token, expiresAt };
}

export async function opened(ctx: ServiceContext, s: { token: string; expiresAt: Date }): Promise<OpenedSession> {
  const { view } = await authenticateSession(ctx, { token: s.token });
  return { ...s, view };
}

const refused = (why: string) => new AppError("unauthorized", `session: ${why}; log in again`);

/**
 * Resolves a session cookie to the caller: the same Actor an API key gives,
 * with the role of the person's membership in the session's workspace.
 */
export async function authenticateSession(ctx: ServiceContext, opts: { token: string }): Promise<{ actor: Actor; view: SessionView; sessionId: string }> {
  const { sessions: s, users: u } = ctx.db.t;
  const [row] = await ctx.db.read
    .select({ session: s, user: u })
    .from(s)
    .innerJoin(u, eq(u.id, s.userId))
    .where(eq(s.tokenHash, hashOf(opts.token)));
  if (!row) throw refused("not a valid session");
  const now = ctx.clock.now();
  if (row.session.revokedAt) throw refused("this session has ended");
  if (row.session.expiresAt.getTime() <= now.getTime()) throw refused("this session has expired");
  if (now.getTime() - row.session.lastSeenAt.getTime() > ctx.settings.sessions.idleMinutes * 60_000) throw refused("this session has expired after being idle");
  const workspaces = await membershipsOf(ctx, row.user.id);
  const current = workspaces.find((m) => m.workspaceId === row.session.workspaceId) ?? workspaces[0];
  if (!current) throw refused("you are not a member of any workspace");
  if (now.getTime() - row.session.lastSeenAt.getTime() > TOUCH_MS || current.workspaceId !== row.session.workspaceId) {
    const id = row.session.id;
    await ctx.db.tx((w) => w.update(s).set({ lastSeenAt: now, workspaceId: current.workspaceId }).where(eq(s.id, id)), { quiet: true });
  }
  const { workspaces: wsT } = ctx.db.t;
  const [ws] = await ctx.db.read.select({ features: wsT.features, defaultVersion: wsT.defaultVersion }).from(wsT).where(eq(wsT.id, current.workspaceId));
  const actor: Actor = {
    workspaceId: current.workspaceId,
    keyId: null,
    keyName: row.user.email,
    userId: row.user.id,
    role: current.role,
    features: ws?.features ?? [],
    defaultVersion: ws?.defaultVersion && isApiVersion(ws.defaultVersion) ? ws.defaultVersion : null,
  };
  const view: SessionView = {
    person: { id: row.user.id, email: row.user.email, name: row.user.name, emailVerified: row.user.emailVerifiedAt !== null },
    workspaceId: current.workspaceId,
    role: current.role,
    workspaces,
  };
  return { actor, view, sessionId: row.session.id };
}

/**
 * Ends the session (log out); its cookie is refused from then on, on every
 * instance. Ending an ended session is not an error, and records nothing.
 */
export async function endSession(ctx: ServiceContext, opts: { token: string; origin?: Origin }): Promise<void> {
  const { sessions: s, users: u } = ctx.db.t;
  const now = ctx.clock.now();
  await ctx.db.tx(async (w) => {
    const ended = await w
      .update(s)
      .set({ revokedAt: now, updatedAt: now })
      .where(and(eq(s.tokenHash, hashOf(opts.token)), isNull(s.revokedAt)))
      .returning({ id: s.id, userId: s.userId, workspaceId: s.workspaceId });
    const session = ended[0];
    if (!session?.workspaceId) return;
    const [user] = await w.select({ email: u.email }).from(u).where(eq(u.id, session.userId));
    const by = { userId: session.userId, email: user?.email ?? "", origin: opts.origin };
    await recordAudit(ctx, w, by, { workspaceId: session.workspaceId, action: "session.logOut", resourceType: "session", resourceId: session.id });
  });
}

/** The workspace switcher: the session works in another of the person's workspaces from now on. */
/** Recorded in the workspace the session moves to. */
export async function switchWorkspace(ctx: ServiceContext, opts: { token: string; actor: Actor; workspaceId: string }): Promise<SessionView> {
  const m = ctx.db.t.memberships;
  const userId = opts.actor.userId ?? "";
  const [member] = await ctx.db.read.select({ id: m.id }).from(m).where(and(eq(m.userId, userId), eq(m.workspaceId, opts.workspaceId)));
  if (!member) throw new AppError("not_found", `workspace '${opts.workspaceId}' not found`);
  const s = ctx.db.t.sessions;
  await ctx.db.tx(async (w) => {
    const moved = await w
      .update(s)
      .set({ workspaceId: opts.workspaceId, updatedAt: ctx.clock.now() })
      .where(and(eq(s.tokenHash, hashOf(opts.token)), eq(s.userId, userId)))
      .returning({ id: s.id });
    for (const { id } of moved) {
      await recordAudit(ctx, w, opts.actor, { workspaceId: opts.workspaceId, action: "session.switchWorkspace", resourceType: "session", resourceId: id, fields: ["workspaceId"] });
    }
  });
  return (await authenticateSession(ctx, { token: opts.token })).view;
}
