import { and, eq, isNull } from "drizzle-orm";
import type { Writer } from "../../../db/client";
import { AppError } from "../../domain/errors";
import { newId } from "../../domain/ids";
import { parseInput } from "../../domain/validation";
import type { Actor, Origin, ServiceContext } from "../context";
import { recordAccountChange } from "./audit";
import { hashOf, newSecret } from "./secrets";
import { TokenInput } from "./shapes";

/** How long a verification link works. */
export const VERIFY_TTL_MS = 48 * 3600_000;

/** A link written in the caller's transaction and mailed after it commits (when outgoing mail is configured). */
export interface PendingMail {
  url: string;
  /** true: handed to the mail server; false: no outgoing mail is configured, or sending failed (logged). */
  send(): Promise<boolean>;
}

export async function mailLink(ctx: ServiceContext, to: string, subject: string, text: string): Promise<boolean> {
  const mailer = ctx.notify.EMAIL;
  if (!mailer) return false;
  try {
    await mailer.send(to, { subject, text });
    return true;
  } catch (e) {
    ctx.log.warn({ err: e }, "could not mail a link");
    return false;
  }
}

export async function issueVerification(ctx: ServiceContext, w: Writer, email: string): Promise<PendingMail> {
  const now = ctx.clock.now();
  const { token, hash } = newSecret();
  await w.insert(ctx.db.t.userTokens).values({
    id: newId("userToken"),
    kind: "verify",
    tokenHash: hash,
    email,
    workspaceId: null,
    role: null,
    expiresAt: new Date(now.getTime() + VERIFY_TTL_MS),
    usedAt: null,
    createdAt: now,
    updatedAt: now,
  });
  const url = `${ctx.settings.publicUrl}/verify?token=${token}`;
  return {
    url,
    send: () => mailLink(ctx, email, "Confirm your e-mail address", `Open this link within 48 hours to confirm your e-mail address:\n\n${url}\n`),
  };
}

/** Follows a verification link: single use, expiring. */
export async function verifyEmail(ctx: ServiceContext, raw: unknown, opts: { origin?: Origin } = {}): Promise<{ email: string }> {
  const input = parseInput(TokenInput, raw);
  const { userTokens: t, users: u } = ctx.db.t;
  const now = ctx.clock.now();
  return ctx.db.tx(async (w) => {
    const [row] = await w.select().from(t).where(and(eq(t.tokenHash, hashOf(input.token)), eq(t.kind, "verify")));
    if (!row || row.usedAt) throw new AppError("invalid_input", "token: this link is not valid or has been used already");
    if (row.expiresAt.getTime() <= now.getTime()) throw new AppError("invalid_input", "token: this link has expired; log in to get a new one");
    await w.update(t).set({ usedAt: now, updatedAt: now }).where(eq(t.id, row.id));
    const verified = await w
      .update(u)
      .set({ emailVerifiedAt: now, updatedAt: now })
      .where(and(eq(u.email, row.email), isNull(u.emailVerifiedAt)))
      .returning({ id: u.id });
    for (const { id } of verified) {
      await recordAccountChange(ctx, w, { userId: id, email: row.email, origin: opts.origin }, id, { action: "person.verifyEmail", fields: ["emailVerified"] });
    }
    return { email: row.email };
  });
}

/** The operator's way, where no outgoing mail is configured (CLI `user:verify --email`). */
export async function verifyByOperator(ctx: ServiceContext, opts: { email: string }): Promise<{ email: string; verifiedAt: Date }> {
  const u = ctx.db.t.users;
  const email = opts.email.trim().toLowerCase();
  const now = ctx.clock.now();
  return ctx.db.tx(async (w) => {
    const [row] = await w.select({ id: u.id, verifiedAt: u.emailVerifiedAt }).from(u).where(eq(u.email, email));
    if (!row) throw new AppError("not_found", `user '${email}' not found`);
    if (row.verifiedAt) return { email, verifiedAt: row.verifiedAt };
    await w.update(u).set({ emailVerifiedAt: now, updatedAt: now }).where(eq(u.email, email));
    await recordAccountChange(ctx, w, "cli", row.id, { action: "person.verifyEmail", fields: ["emailVerified"] });
    return { email, verifiedAt: now };
  });
}

/** A new verification link for a logged-in person whose address is not verified yet. */
export async function resendVerification(ctx: ServiceContext, opts: { email: string; actor: Actor }): Promise<{ mailed: boolean }> {
  const link = await ctx.db.tx(async (w) => {
    const issued = await issueVerification(ctx, w, opts.email);
    if (opts.actor.userId) await recordAccountChange(ctx, w, opts.actor, opts.actor.userId, { action: "person.resendVerification" });
    return issued;
  });
  return { mailed: await link.send() };
}
