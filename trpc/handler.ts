import { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { getErrorShape, getProcedureAtPath } from "@trpc/server/unstable-core-do-not-import";
import { type AppError, isAppError, UNAVAILABLE_RETRY_AFTER_SECONDS } from "../src/domain/errors";
import { currentRequestScope } from "../src/domain/request-context";
import { asUnavailable } from "../src/services/shared/unavailable";
import { LATEST_VERSION } from "../src/domain/versions";
import { boundedJsonRequest } from "../src/transport/body";
import { admitUnversioned, declaredBytes, type HttpOptions, limitHeadersOf } from "../src/transport/admission";
import { checkOrigin, clientAddress } from "../src/transport/credentials";
import { PUBLIC_PROCEDURES } from "./routers/account";
import type { ServiceContext } from "../src/services/context";
import { TRPC_CODE } from "./errors";
import type { TrpcContext } from "./init";
import { appRouter } from "./router";

/**
 * tRPC over the fetch adapter at /trpc, authenticated by the same
 * `x-api-key`; only then is the body read, with the same size limit as
 * REST. A refusal is thrown from createContext so that tRPC shapes it.
 * tRPC is unversioned: it always serves the latest shapes.
 *
 * tRPC answers a subscription with a 200 event stream even when
 * createContext refuses (the error comes as an event); a refused
 * subscription is answered here instead, with tRPC's error shape and the
 * refusal's status, so that no anonymous stream is ever opened.
 *
 * An event stream opened by a browser cannot set headers: @trpc/client's
 * `httpSubscriptionLink` sends its `connectionParams` as JSON in the
 * `connectionParams` query parameter instead, and the key is taken from
 * there (`x-api-key`, or `apiKey`) when the header is absent.
 */
export function createTrpcHandler(svc: ServiceContext, opts: HttpOptions) {
  return async (req: Request): Promise<Response> => {
    // Metrics label a call by its procedure when there is one such (a batch or an unknown name stays `/trpc/*`).
    const scope = currentRequestScope();
    if (scope) {
      const path = trpcPath(req.url);
      if (Object.hasOwn(appRouter._def.procedures, path)) scope.route = `/trpc/${path}`;
    }
    const original = req;
    let ctx: TrpcContext | null = null;
    let refusal: AppError | null = null;
    req = withConnectionParamsKey(req);
    try {
      const admitted = await admitUnversioned(svc, req, opts, "trpc");
      ctx = { svc, actor: admitted.actor, bodyBytes: declaredBytes(req) };
      req = admitted.request;
    } catch (raw) {
      const e = isAppError(raw) ? raw : asUnavailable(raw);
      if (!e) throw raw;
      refusal = e;
      // Public procedures (sign-up, log-in, ...) need no caller: a stale cookie must not stop a log-in. In a batch
      // that also names others, those others are refused one by one with this refusal (trpc/init.ts).
      // Only a refused caller falls back so; a refused body (size, encoding) is refused whatever the procedure.
      if ((e.code === "unauthorized" || e.code === "forbidden") && namesPublic(req)) {
        try {
          req = await admitPublic(svc, req, opts);
          ctx = { svc, actor: null, refusal: e };
          refusal = null;
        } catch (e2) {
          if (!isAppError(e2)) throw e2;
          refusal = e2;
        }
      }
      if (refusal) {
        const refused = await refusedSubscription(req, refusal);
        if (refused) return refused;
        // Without the body, tRPC gets as far as createContext (which refuses) whatever was sent.
        req = new Request(req.url, { method: req.method, headers: { "content-type": "application/json" } });
      }
    }
    const res = await fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router: appRouter,
      // The database is down: tell the caller when to try again, as REST and GraphQL do.
      responseMeta: ({ errors }) =>
        errors.some((e) => e.code === TRPC_CODE.unavailable)
          ? { headers: new Headers({ "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) }) }
          : {},
      createContext: async ({ resHeaders }): Promise<TrpcContext> => {
        if (refusal) {
          const limited = limitHeadersOf(refusal);
          if (limited) for (const name in limited) resHeaders.set(name, limited[name] as string);
          throw new TRPCError({ code: TRPC_CODE[refusal.code], message: refusal.message, cause: refusal });
        }
        return { ...(ctx as TrpcContext), resHeaders, http: { request: original, resHeaders, get address() { return clientAddress(original); } } };
      },
    });
    res.headers.set("service-version", LATEST_VERSION);
    return res;
  };
}

/** The request with `x-api-key` taken from tRPC's `connectionParams` query parameter when no header carries one. */
function withConnectionParamsKey(req: Request): Request {
  if (req.headers.has("x-api-key")) return req;
  const raw = new URL(req.url).searchParams.get("connectionParams");
  if (raw === null) return req;
  let params: unknown;
  try {
    params = JSON.parse(raw);
  } catch {
    return req; // no key found: the usual 401
  }
  if (typeof params !== "object" || params === null) return req;
  const { "x-api-key": header, apiKey } = params as Record<string, unknown>;
  const key = typeof header === "string" ? header : typeof apiKey === "string" ? apiKey : null;
  if (key === null) return req;
  const headers = new Headers(req.headers);
  headers.set("x-api-key", key);
  return new Request(req, { headers });
}

/** A procedure the call names (a batch names several) is public. */
function namesPublic(req: Request): boolean {
  const paths = decodeURIComponent(new URL(req.url).pathname.replace(/^\/trpc\//, "")).split(",");
  return paths.some((p) => PUBLIC_PROCEDURES.has(p));
}

/** A public call: only the Origin check (against log-in CSRF) and the body limit. */
async function admitPublic(svc: ServiceContext, req: Request, opts: HttpOptions): Promise<Request> {
  if (req.headers.get("origin") !== null) checkOrigin(svc, req);
  return boundedJsonRequest(req, opts.maxJsonBodyBytes);
}

async function refusedSubscription(req: Request, refusal: AppError): Promise<Response | null> {
  const path = decodeURIComponent(new URL(req.url).pathname.replace(/^\/trpc\//, ""));
  const proc = await getProcedureAtPath(appRouter, path).catch(() => null);
  if (proc?._def.type !== "subscription") return null;
  const error = new TRPCError({ code: TRPC_CODE[refusal.code], message: refusal.message, cause: refusal });
  const shape = getErrorShape({ config: appRouter._def._config, error, type: "subscription", path, input: undefined, ctx: undefined });
  return Response.json({ error: shape }, { status: getHTTPStatusCodeFromError(error), headers: { "service-version": LATEST_VERSION } });
}

/** The part of a tRPC URL after `/trpc/`, without the query (no URL object made per call). */
function trpcPath(url: string): string {
  const start = url.indexOf("/trpc/") + "/trpc/".length;
  const query = url.indexOf("?", start);
  return url.slice(start, query === -1 ? undefined : query);
}
