import { and, asc, eq, gt, isNull } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { newId } from "../../domain/ids";
import { parseInput } from "../../domain/validation";
import { recordAudit } from "../audit";
import type { Actor, Origin, ServiceContext } from "../context";
import { checkPassword, hashPassword, verifyPassword } from "./password";
import { hashOf, newSecret } from "./secrets";
import { openSession, opened } from "./sessions";
import { AcceptInviteInput, ChangeRoleInput, type InvitationView, InviteInput, type MemberView, MemberIdInput, type OpenedSession, type Role } from "./shapes";
import { mailLink } from "./verify";

/** How long an invitation link works. */
export const INVITE_TTL_MS = 7 * 24 * 3600_000;

/** Roles mean here what they mean for API keys: changing who is in a workspace, or its keys, takes an admin. */
export function requireAdmin(actor: Actor, what: string): void {
  if (actor.role !== "admin") throw new AppError("forbidden", `${what} needs the admin role`);
}

export async function listMembers(ctx: ServiceContext, opts: { actor: Actor }): Promise<{ members: MemberView[]; invitations: InvitationView[] }> {
  const { memberships: m, users: u, userTokens: t } = ctx.db.t;
  const rows = await ctx.db.read
    .select({ userId: u.id, email: u.email, name: u.name, role: m.role, joinedAt: m.createdAt })
    .from(m)
    .innerJoin(u, eq(u.id, m.userId))
    .where(eq(m.workspaceId, opts.actor.workspaceId))
    .orderBy(asc(m.createdAt), asc(u.id));
  const invites = await ctx.db.read
    .select({ id: t.id, email: t.email, role: t.role, expiresAt: t.expiresAt })
    .from(t)
    .where(and(eq(t.kind, "invite"), eq(t.workspaceId, opts.actor.workspaceId), isNull(t.usedAt), gt(t.expiresAt, ctx.clock.now())))
    .orderBy(asc(t.createdAt));
  return {
    members: rows.map((r) => ({ ...r, role: r.role as Role })),
    invitations: invites.map((r) => ({ ...r, role: r.role as Role })),
  };
}

/**
 * An admin invites a person by e-mail with a role. The single-use link is
 * mailed when outgoing mail is configured; otherwise it is answered here,
 * once, for the admin to hand on.
 */
export async function invite(ctx: ServiceContext, opts: { actor: Actor }, raw: unknown): Promise<{ invitation: InvitationView; mailed: boolean; url: string | null }> {
  requireAdmin(opts.actor, "inviting members");
  const input = parseInput(InviteInput, raw);
  const email = input.email.toLowerCase();
  const { memberships: m, users: u, userTokens: t, workspaces: ws } = ctx.db.t;
  const now = ctx.clock.now();
  const { token, hash } = newSecret();
  const made = await ctx.db.tx(async (w) => {
    const [member] = await w
      .select({ id: m.id })
      .from(m)
      .innerJoin(u, eq(u.id, m.userId))
      .where(and(eq(m.workspaceId, opts.actor.workspaceId), eq(u.email, email)));
    if (member) throw new AppError("conflict", `email: '${email}' is a member of this workspace already`);
    const [workspace] = await w.select({ name: ws.name }).from(ws).where(eq(ws.id, opts.actor.workspaceId));
    const row = {
      id: newId("userToken"),
      kind: "invite",
      tokenHash: hash,
      email,
      workspaceId: opts.actor.workspaceId,
      role: input.role,
      expiresAt: new Date(now.getTime() + INVITE_TTL_MS),
      usedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await w.insert(t).values(row);
    await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "invitation.create", resourceType: "invitation", resourceId: row.id, fields: ["email", "role"] });
    return { row, workspaceName: workspace?.name ?? "" };
  });
  const url = `${ctx.settings.publicUrl}/invite?token=${token}`;
  const mailed = await mailLink(ctx, email, `You are invited to ${made.workspaceName}`, `Open this link within 7 days to join ${made.workspaceName}:\n\n${url}\n`);
  return { invitation: { id: made.row.id, email, role: input.role, expiresAt: made.row.expiresAt }, mailed, url: mailed ? null : url };
}

/**
 * Follows an invitation link: a person with an account proves it with their
 * password, a new person chooses a name and password. Either way they join
 * with the invited role and are logged in to that workspace.
 */
export async function acceptInvite(ctx: ServiceContext, raw: unknown, opts: { origin?: Origin } = {}): Promise<OpenedSession> {
  const input = parseInput(AcceptInviteInput, raw);
  const { memberships: m, users: u, userTokens: t } = ctx.db.t;
  const now = ctx.clock.now();
  const [row] = await ctx.db.read.select().from(t).where(and(eq(t.tokenHash, hashOf(input.token)), eq(t.kind, "invite")));
  if (!row || row.usedAt || !row.workspaceId) throw new AppError("invalid_input", "token: this invitation is not valid or has been used already");
  if (row.expiresAt.getTime() <= now.getTime()) throw new AppError("invalid_input", "token: this invitation has expired; ask for a new one");
  if (!input.password) throw new AppError("invalid_input", "password: is required");
  const [existing] = await ctx.db.read.select().from(u).where(eq(u.email, row.email));
  let newHash: string | null = null;
  if (existing) {
    if (!(await verifyPassword(input.password, existing.passwordHash))) throw new AppError("unauthorized", "password: is wrong for this account");
  } else {
    if (!input.name) throw new AppError("invalid_input", "name: is required");
    checkPassword(input.password, row.email);
    newHash = await hashPassword(input.password);
  }
  const workspaceId = row.workspaceId;
  const session = await ctx.db.tx(async (w) => {
    const used = await w.update(t).set({ usedAt: now, updatedAt: now }).where(and(eq(t.id, row.id), isNull(t.usedAt))).returning({ id: t.id });
    if (used.length === 0) throw new AppError("invalid_input", "token: this invitation has been used already");
    let userId = existing?.id;
    if (!userId) {
      userId = newId("user");
      // The link reached the address by mail only where outgoing mail is configured; otherwise the address is still unproven.
      await w.insert(u).values({ id: userId, email: row.email, name: input.name!, passwordHash: newHash!, emailVerifiedAt: ctx.notify.EMAIL ? now : null, createdAt: now, updatedAt: now });
    }
    const [already] = await w.select({ id: m.id }).from(m).where(and(eq(m.workspaceId, workspaceId), eq(m.userId, userId)));
    if (!already) await w.insert(m).values({ id: newId("membership"), workspaceId, userId, role: row.role ?? "member", createdAt: now, updatedAt: now });
    // A new person's account is made here: its name and password are what they set.
    const fields = existing ? [] : ["name", "password"];
    await recordAudit(ctx, w, { userId, email: row.email, origin: opts.origin }, { workspaceId, action: "invitation.accept", resourceType: "invitation", resourceId: row.id, fields });
    return openSession(ctx, w, userId, workspaceId);
  });
  return opened(ctx, session);
}

/** An admin removes a member (their sessions lose this workspace at once). The last admin stays. */
export async function removeMember(ctx: ServiceContext, opts: { actor: Actor }, raw: unknown): Promise<{ removed: true }> {
  requireAdmin(opts.actor, "removing members");
  const input = parseInput(MemberIdInput, raw);
  const m = ctx.db.t.memberships;
  return ctx.db.tx(async (w) => {
    const rows = await w.select().from(m).where(eq(m.workspaceId, opts.actor.workspaceId));
    const target = rows.find((r) => r.userId === input.userId);
    if (!target) throw new AppError("not_found", `member '${input.userId}' not found`);
    if (target.role === "admin" && rows.filter((r) => r.role === "admin").length === 1) {
      throw new AppError("conflict", "userId: the last admin of a workspace cannot be removed");
    }
    await w.delete(m).where(eq(m.id, target.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "member.remove", resourceType: "member", resourceId: target.userId });
    return { removed: true as const };
  });
}

/**
 * An admin changes a member's role; it holds from their next request on.
 * The last admin stays one. The same role again changes and records nothing.
 */
export async function changeRole(ctx: ServiceContext, opts: { actor: Actor }, raw: unknown): Promise<MemberView> {
  requireAdmin(opts.actor, "changing roles");
  const input = parseInput(ChangeRoleInput, raw);
  const { memberships: m, users: u } = ctx.db.t;
  return ctx.db.tx(async (w) => {
    const rows = await w.select().from(m).where(eq(m.workspaceId, opts.actor.workspaceId));
    const target = rows.find((r) => r.userId === input.userId);
    if (!target) throw new AppError("not_found", `member '${input.userId}' not found`);
    if (target.role === "admin" && input.role !== "admin" && rows.filter((r) => r.role === "admin").length === 1) {
      throw new AppError("conflict", "role: the last admin of a workspace stays an admin");
    }
    if (target.role !== input.role) {
      await w.update(m).set({ role: input.role, updatedAt: ctx.clock.now() }).where(eq(m.id, target.id));
      await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "member.changeRole", resourceType: "member", resourceId: target.userId, fields: ["role"] });
    }
    const [person] = await w.select({ email: u.email, name: u.name }).from(u).where(eq(u.id, target.userId));
    return { userId: target.userId, email: person?.email ?? "", name: person?.name ?? "", role: input.role, joinedAt: target.createdAt };
  });
}

/** Withdraws an invitation that has not been accepted. */
export async function revokeInvite(ctx: ServiceContext, opts: { actor: Actor }, raw: { id: string }): Promise<{ revoked: true }> {
  requireAdmin(opts.actor, "withdrawing invitations");
  const t = ctx.db.t.userTokens;
  const now = ctx.clock.now();
  const done = await ctx.db.tx(async (w) => {
    const withdrawn = await w
      .update(t)
      .set({ usedAt: now, updatedAt: now })
      .where(and(eq(t.id, raw.id), eq(t.kind, "invite"), eq(t.workspaceId, opts.actor.workspaceId), isNull(t.usedAt)))
      .returning({ id: t.id });
    for (const { id } of withdrawn) {
      await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "invitation.revoke", resourceType: "invitation", resourceId: id });
    }
    return withdrawn;
  });
  if (done.length === 0) throw new AppError("not_found", `invitation '${raw.id}' not found`);
  return { revoked: true };
}
