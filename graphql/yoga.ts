import { createYoga } from "graphql-yoga";
import { isAppError } from "../src/domain/errors";
import { LATEST_VERSION } from "../src/domain/versions";
import { admitUnversioned, type HttpOptions } from "../src/http/call";
import { HTTP_STATUS } from "../src/http/errors";
import type { ServiceContext } from "../src/services/context";
import type { GqlContext } from "./builder";
import { extensionsOf, maskError } from "./errors";
import { schema } from "./schema";

/** The one Yoga set-up, for HTTP (and SSE) here and for graphql-ws in ws.ts. */
export function createYogaServer(svc: ServiceContext) {
  return createYoga<GqlContext>({
    schema,
    graphqlEndpoint: "/graphql",
    graphiql: false,
    landingPage: false,
    logging: false,
    maskedErrors: { maskError: maskError(svc.log) },
  });
}

/**
 * GraphQL at /graphql, authenticated by the same `x-api-key` before Yoga
 * sees the request; only then is the body read, with the same size limit
 * as REST. GraphQL is unversioned: it always serves the latest shapes.
 * Subscriptions answer as server-sent events when the request accepts
 * `text/event-stream`.
 */
export function createGraphqlHandler(svc: ServiceContext, opts: HttpOptions) {
  const yoga = createYogaServer(svc);
  return async (request: Request): Promise<Response> => {
    let ctx: GqlContext;
    try {
      const admitted = await admitUnversioned(svc, request, opts);
      ctx = { svc, actor: admitted.actor };
      request = admitted.request;
    } catch (e) {
      if (!isAppError(e)) throw e;
      return Response.json(
        { errors: [{ message: e.message, extensions: extensionsOf(e) }] },
        { status: HTTP_STATUS[e.code], headers: { "service-version": LATEST_VERSION } },
      );
    }
    const res = await yoga.fetch(request, ctx);
    res.headers.set("service-version", LATEST_VERSION);
    return res;
  };
}
