import { z } from "zod";
import { AppError } from "../../src/domain/errors";
import { parseInput } from "../../src/domain/validation";
import { sessionToken } from "../../src/transport/credentials";
import { currentRequestId } from "../../src/domain/request-context";
import type { Actor, Origin } from "../../src/services/context";
import * as people from "../../src/services/people";
import { ById, input, publicProcedure, procedure, router, type TrpcContext } from "../init";

/** Procedures that take nothing: absent, or an empty object. */
const NoInput = z.strictObject({}).optional();

/** Callable without a caller (the handler lets them through with no key or a stale cookie). */
export const PUBLIC_PROCEDURES = new Set(["account.signUp", "account.logIn", "account.logOut", "account.verifyEmail", "account.acceptInvite", "account.session"]);

/** HttpOnly, SameSite=Lax, Path=/; Secure when PUBLIC_URL is https. */
function setCookie(ctx: TrpcContext, token: string, expiresAt: Date | null): void {
  if (!ctx.http) return;
  const secure = ctx.svc.settings.publicUrl.startsWith("https:") ? "; Secure" : "";
  const life = expiresAt ? `Max-Age=${Math.max(0, Math.floor((expiresAt.getTime() - ctx.svc.clock.now().getTime()) / 1000))}` : "Max-Age=0";
  ctx.http.resHeaders.append("set-cookie", `${people.SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; ${life}${secure}`);
}

/** Where a public call came from, for the audit record of what it changes (a caller's actor carries its own). */
function originOf(ctx: TrpcContext): Origin {
  return { surface: "trpc", address: ctx.http?.address ?? null, requestId: currentRequestId() ?? null };
}

/** Procedures about the person themselves need their session, not an API key. */
export function personOf(ctx: { actor: Actor; http?: TrpcContext["http"] }): { userId: string; token: string } {
  const token = ctx.http ? sessionToken(ctx.http.request) : null;
  if (!ctx.actor.userId || !token) throw new AppError("forbidden", "this procedure is for a person's session, not an API key");
  return { userId: ctx.actor.userId, token };
}

export const accountRouter = router({
  signUp: publicProcedure.input(input<people.SignUpInput>()).mutation(async ({ ctx, input: data }) => {
    const s = await people.signUp(ctx.svc, data, { origin: originOf(ctx) });
    setCookie(ctx, s.token, s.expiresAt);
    return { session: s.view, verificationMailed: s.verificationMailed };
  }),
  logIn: publicProcedure.input(input<people.LogInInput>()).mutation(async ({ ctx, input: data }) => {
    const s = await people.logIn(ctx.svc, data, { address: ctx.http?.address ?? null, origin: originOf(ctx) });
    setCookie(ctx, s.token, s.expiresAt);
    return { session: s.view };
  }),
  logOut: publicProcedure.input(input<Record<string, never> | undefined>()).mutation(async ({ ctx, input: data }) => {
    parseInput(NoInput, data);
    const token = ctx.http ? sessionToken(ctx.http.request) : null;
    if (token) await people.endSession(ctx.svc, { token, origin: originOf(ctx) });
    setCookie(ctx, "", null);
    return { loggedOut: true };
  }),
  verifyEmail: publicProcedure.input(input<{ token: string }>()).mutation(({ ctx, input: data }) => people.verifyEmail(ctx.svc, data, { origin: originOf(ctx) })),
  acceptInvite: publicProcedure
    .input(input<{ token: string; name?: string; password?: string }>())
    .mutation(async ({ ctx, input: data }) => {
      const s = await people.acceptInvite(ctx.svc, data, { origin: originOf(ctx) });
      setCookie(ctx, s.token, s.expiresAt);
      return { session: s.view };
    }),
  /** The caller's session, or null when there is none (the dashboard asks this first, so that a visitor gets no error). */
  session: publicProcedure.query(async ({ ctx }) => {
    const token = ctx.http ? sessionToken(ctx.http.request) : null;
    if (!token) return null;
    try {
      return (await people.authenticateSession(ctx.svc, { token })).view;
    } catch (e) {
      if (e instanceof AppError && e.code === "unauthorized") return null;
      throw e;
    }
  }),
  me: procedure.query(async ({ ctx }) => (await people.authenticateSession(ctx.svc, { token: personOf(ctx).token })).view),
  switchWorkspace: procedure.input(input<{ workspaceId: string }>()).mutation(({ ctx, input: data }) => {
    const { token } = personOf(ctx);
    const { workspaceId } = parseInput(people.WorkspaceIdInput, data);
    return people.switchWorkspace(ctx.svc, { token, actor: ctx.actor, workspaceId });
  }),
  /** A new password; the person's other sessions end. */
  changePassword: procedure.input(input<people.ChangePasswordInput>()).mutation(({ ctx, input: data }) =>
    people.changePassword(ctx.svc, { actor: ctx.actor, token: personOf(ctx).token, address: ctx.http?.address ?? null }, data),
  ),
  /** The person's open sessions; `current` marks this one. */
  sessions: procedure.query(({ ctx }) => people.listSessions(ctx.svc, { actor: ctx.actor, token: personOf(ctx).token })),
  /** Ends one of the person's own sessions (another device, or this one). */
  revokeSession: procedure.input(ById).mutation(({ ctx, input: data }) => people.revokeSession(ctx.svc, { actor: ctx.actor, token: personOf(ctx).token }, data)),
  resendVerification: procedure.input(input<Record<string, never> | undefined>()).mutation(async ({ ctx, input: data }) => {
    parseInput(NoInput, data);
    const view = (await people.authenticateSession(ctx.svc, { token: personOf(ctx).token })).view;
    if (view.person.emailVerified) throw new AppError("conflict", "email: is verified already");
    return people.resendVerification(ctx.svc, { email: view.person.email, actor: ctx.actor });
  }),
});
