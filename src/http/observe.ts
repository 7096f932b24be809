import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { type Surface, UNMATCHED_ROUTE } from "../adapters/metrics/port";
import { AppError } from "../domain/errors";
import { currentRequestScope, type RequestScope, requestIdFor, runInRequest } from "../domain/request-context";
import type { ServiceContext } from "../services/context";

export const REQUEST_ID_HEADER = "x-request-id";

const surfaceOf = (route: string): Surface => (route === "/graphql" ? "graphql" : route.startsWith("/trpc/") ? "trpc" : "rest");

/**
 * Serves each request inside its request scope (src/domain/request-context.ts):
 * the id (the client's own X-Request-Id when well formed, else a new one)
 * goes back on the reply, and the request is counted by surface, route
 * template, method and status once it is answered.
 */
export function observeRequests(svc: ServiceContext, handle: (request: Request) => Promise<Response>) {
  // Not an async function: the answer's promise is passed on with one `then`, not wrapped in another promise.
  return (request: Request): Promise<Response> => {
    const scope: RequestScope = { requestId: requestIdFor(request.headers.get(REQUEST_ID_HEADER)) };
    const t0 = performance.now();
    return runInRequest(scope, handle, request).then((res) => {
      const route = scope.route ?? UNMATCHED_ROUTE;
      svc.metrics.httpRequest(surfaceOf(route), route, request.method, res.status, (performance.now() - t0) / 1000);
      return res;
    });
  };
}

/** Records the matched route template in the request's scope (a path is never a label); the app's onRequest puts the id on the reply. */
export function routeTemplates() {
  return new Elysia({ name: "route-templates" })
    .onTransform({ as: "global" }, ({ route }) => {
      const scope = currentRequestScope();
      if (scope) scope.route = route;
    });
}

/** `GET /metrics`: the Prometheus text format; with METRICS_TOKEN set, only for `Authorization: Bearer <token>`. */
export function metricsRoute(svc: ServiceContext, token: string | null) {
  const expected = token === null ? null : Buffer.from(`Bearer ${token}`);
  return new Elysia({ name: "metrics" }).get(
    "/metrics",
    async ({ request, set }) => {
      if (expected) {
        const given = Buffer.from(request.headers.get("authorization") ?? "");
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          set.headers["www-authenticate"] = 'Bearer realm="metrics"';
          throw new AppError("unauthorized", "authorization: send 'Bearer <METRICS_TOKEN>' to read /metrics");
        }
      }
      const { contentType, body } = await svc.metrics.render();
      set.headers["content-type"] = contentType;
      set.headers["cache-control"] = "no-store";
      return body;
    },
    { detail: { hide: true } },
  );
}
