import { initTRPC, TRPCError } from "@trpc/server";
import { z } from "zod";
import { AppError, ERROR_CODES, isAppError } from "../src/domain/errors";
import { currentRequestId } from "../src/domain/request-context";
import { formatIssues } from "../src/domain/validation";
import { HTTP_STATUS } from "../src/transport/status";
import { budgetOf, limitHeadersOf, limitKey } from "../src/transport/admission";
import type { Actor, ServiceContext } from "../src/services/context";
import { asUnavailable } from "../src/services/shared/unavailable";
import { TRPC_CODE } from "./errors";

/** What a procedure sees of the HTTP exchange (absent for in-process callers): cookies are read and set through it. */
export interface TrpcHttp {
  request: Request;
  resHeaders: Headers;
  /** The client's address, for log-in throttling; null when unknown. */
  address: string | null;
}

export interface TrpcContext {
  svc: ServiceContext;
  /** null only on public procedures (sign-up, log-in, ...), which need no caller. */
  actor: Actor | null;
  /** Why there is no caller (a bad key, an expired session), for the procedures that need one. */
  refusal?: AppError;
  http?: TrpcHttp;
  /** The HTTP answer's headers (the fetch adapter); absent for in-process callers. */
  resHeaders?: Headers;
  /** Body bytes the request declared, charged to the caller's upload budget by its first procedure call. */
  bodyBytes?: number;
}

/** A keep-alive (`event: ping`) on a quiet SSE subscription, as often as GraphQL Yoga sends its own comment (12 s): proxies close idle streams. */
export const SSE_PING_MS = 12_000;

const t = initTRPC.context<TrpcContext>().create({
  sse: { ping: { enabled: true, intervalMs: SSE_PING_MS } },
  errorFormatter({ shape, error }) {
    const app = isAppError(error.cause) ? error.cause : null;
    const zod = error.cause instanceof z.ZodError ? error.cause : null;
    // tRPC's own errors (no such procedure, unparsable input, ...) get the first service code that maps to theirs.
    const code = app?.code ?? (zod ? "invalid_input" : (ERROR_CODES.find((c) => TRPC_CODE[c] === error.code) ?? null));
    return {
      ...shape,
      message: zod ? formatIssues(zod.issues) : shape.message,
      data: { ...shape.data, stack: undefined, error: code, statusCode: code ? HTTP_STATUS[code] : shape.data.httpStatus, requestId: currentRequestId() },
    };
  },
});

/** Services throw AppError; this turns it into the TRPCError with the matching code. */
const appErrors = t.middleware(async ({ next, ctx }) => {
  const result = await next();
  if (!result.ok) {
    const cause = result.error.cause;
    if (isAppError(cause)) throw new TRPCError({ code: TRPC_CODE[cause.code], message: cause.message, cause });
    if (cause instanceof z.ZodError) {
      // The wrapper's own input shape (ById, ByIdWith): the same message a caller gets over HTTP.
      throw new TRPCError({ code: "BAD_REQUEST", message: formatIssues(cause.issues), cause: new AppError("invalid_input", formatIssues(cause.issues)) });
    }
    const unavailable = asUnavailable(cause);
    if (unavailable) throw new TRPCError({ code: TRPC_CODE.unavailable, message: unavailable.message, cause: unavailable });
    if (result.error.code === "INTERNAL_SERVER_ERROR") {
      const ref = crypto.randomUUID();
      ctx.svc.log.error({ err: cause ?? result.error, ref }, "unhandled error in tRPC procedure");
      throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: `internal error (reference ${ref})`, cause: new AppError("internal", "internal error") });
    }
  }
  return result;
});

/**
 * Every procedure but the public ones needs a caller: an API key or a
 * session cookie. Every procedure call then counts against its key's request
 * budget (and the request's body against its byte budget, once), as REST
 * requests do; the answer carries the RateLimit header fields. unkey's
 * ratelimitProcedure. One middleware for both: each layer of tRPC's chain
 * costs a promise and a copy of the context per call.
 */
const caller = t.middleware(async ({ ctx, next }) => {
  const actor = ctx.actor;
  if (!actor) throw ctx.refusal ?? new AppError("unauthorized", "x-api-key: header is required (or log in for a session cookie)");
  const bytes = ctx.bodyBytes ?? 0;
  ctx.bodyBytes = 0;
  try {
    const limited = limitKey(ctx.svc, budgetOf(actor), bytes);
    const headers = limited instanceof Promise ? await limited : limited;
    if (headers && ctx.resHeaders) for (const name in headers) ctx.resHeaders.set(name, headers[name] as string);
  } catch (e) {
    const headers = limitHeadersOf(e);
    if (headers && ctx.resHeaders) for (const name in headers) ctx.resHeaders.set(name, headers[name] as string);
    throw e;
  }
  return next({ ctx: { actor } });
});

export const router = t.router;
export const procedure = t.procedure.use(appErrors).use(caller);
/** Procedures a person uses before they have a session (sign-up, log-in, verification and invitation links, log-out). */
export const publicProcedure = t.procedure.use(appErrors);
export const createCallerFactory = t.createCallerFactory;

/** Input is passed through untouched: each use case parses its own input, so every transport gets the same rules and messages. */
export function input<T>() {
  return (raw: unknown) => raw as T;
}

export const ById = z.object({ id: z.string().min(1, "must not be empty") });
export const ByIdWith = <T>() => z.object({ id: z.string().min(1, "must not be empty"), data: z.custom<T>((v) => v !== undefined, "is required") });
