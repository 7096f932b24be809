import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Elysia } from "elysia";
import { MIGRATION_GUIDE_PATH } from "../domain/versions";
import type { ServiceContext } from "../services/context";
import { type HttpOptions, provisionalVersion } from "./call";
import { errorBody, toAppError } from "./errors";
import { HTTP_STATUS } from "../transport/status";
import { limitHeadersOf } from "../transport/admission";
import { settle } from "./idempotency";
import { buildDocument, type DocumentedRoute, docsPage } from "./openapi";
import { arrivalRoutes } from "./routes/arrivals";
import { auditRoutes } from "./routes/audit";
import { connectionRoutes } from "./routes/connections";
import { documentRoutes } from "./routes/documents";
import { fileRoutes } from "./routes/files";
import { pipelineRoutes } from "./routes/pipelines";
import { runRoutes } from "./routes/runs";
import { outboundRoutes } from "./routes/outbound";
import { schemaRoutes } from "./routes/schemas";
import { storageRoutes } from "./routes/storage";
import { webhookRoutes } from "./routes/webhooks";
import { dashboardRoutes } from "./web";
import { notificationRoutes } from "./routes/notifications";
import { AppError, UNAVAILABLE_RETRY_AFTER_SECONDS } from "../domain/errors";
import { currentRequestId, currentRequestScope } from "../domain/request-context";
import type { Readiness } from "../services/health/readiness";
import { metricsRoute, observeRequests, REQUEST_ID_HEADER, routeTemplates } from "./observe";

export interface Mounts {
  /** GraphQL (Yoga) and tRPC answer on their own paths with their own error shapes. */
  graphql: (request: Request) => Response | Promise<Response>;
  trpc: (request: Request) => Response | Promise<Response>;
}

const ROOT = join(import.meta.dir, "..", "..");
const SWAGGER_DIR = join(ROOT, "node_modules", "swagger-ui-dist");
const SWAGGER_ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
};

/** The one HTTP app: REST routes, /graphql, /trpc, the API description, on one port. */
export function createHttpApp(
  svc: ServiceContext,
  mounts: Mounts,
  opts: HttpOptions & { version: string; metricsToken?: string | null; readiness: () => Promise<Readiness> },
) {
  const http: HttpOptions = { maxJsonBodyBytes: opts.maxJsonBodyBytes };
  const migrationGuide = readFileSync(join(ROOT, "docs", "migration-2026-05-25.md"), "utf8");
  let document: unknown;
  let routes: () => DocumentedRoute[] = () => [];

  const started = new WeakMap<Request, number>();
  // The log level is set once, at start-up (LOG_LEVEL).
  const accessLog = svc.log.isLevelEnabled("info");
  const app = new Elysia({ name: "file-pipeline-service" })
    .use(routeTemplates())
    .onRequest(({ request, set }) => {
      if (accessLog) started.set(request, performance.now());
      set.headers["service-version"] = provisionalVersion(request, svc.clock.millis());
      // The request's id on every reply, with the headers Elysia writes anyway (src/http/observe.ts gives each request its scope).
      const scope = currentRequestScope();
      if (scope) set.headers[REQUEST_ID_HEADER] = scope.requestId;
    })
    // One access line a request: method, route, status and time; never bodies, keys or query values.
    // Registered only when written: Elysia schedules every after-response hook (a setImmediate per request) whether or not it logs.
    .onAfterResponse({ as: "global" }, accessLog ? ({ request, route, set }) => {
      const t0 = started.get(request);
      svc.log.info(
        { requestId: currentRequestId(), method: request.method, route, status: set.status, ms: t0 === undefined ? undefined : Math.round((performance.now() - t0) * 10) / 10 },
        "request",
      );
    } : [])
    .onError({ as: "global" }, async ({ code, error, set, request, path }) => {
      const e = toAppError(error, { frameworkCode: code, method: request.method, path, log: svc.log });
      // A request that failed did nothing: its Idempotency-Key is free again.
      await settle(svc, request, null);
      const limited = limitHeadersOf(e);
      if (limited) Object.assign(set.headers, limited);
      set.status = HTTP_STATUS[e.code];
      set.headers["content-type"] = "application/json";
      if (e.code === "unavailable") set.headers["retry-after"] = String(UNAVAILABLE_RETRY_AFTER_SECONDS);
      return errorBody(e);
    })
    .get("/healthz", () => ({ ok: true }), { detail: { hide: true } })
    .use(metricsRoute(svc, opts.metricsToken ?? null))
    // Public and cheap (docs/reliability.md): /livez is the process answering; /readyz checks what traffic needs, each bounded.
    .get("/livez", () => ({ ok: true }), { detail: { hide: true } })
    .get(
      "/readyz",
      async ({ set }) => {
        const r = await opts.readiness();
        set.status = r.ok ? 200 : 503;
        set.headers["cache-control"] = "no-store";
        return r;
      },
      { detail: { hide: true } },
    )
    .get("/openapi.json", () => (document ??= buildDocument(routes(), { publicUrl: svc.settings.publicUrl, version: opts.version })))
    .get("/docs", ({ set }) => {
      set.headers["content-type"] = "text/html; charset=utf-8";
      return docsPage("/openapi.json");
    })
    .get("/docs/assets/:file", ({ params, set }) => {
      const type = SWAGGER_ASSETS[params.file];
      if (!type) throw new AppError("not_found", `no asset '${params.file}'`);
      set.headers["content-type"] = type;
      set.headers["cache-control"] = "public, max-age=86400";
      return Bun.file(join(SWAGGER_DIR, params.file));
    })
    .get(MIGRATION_GUIDE_PATH, ({ set }) => {
      set.headers["content-type"] = "text/markdown; charset=utf-8";
      return migrationGuide;
    })
    .all("/graphql", ({ request }) => mounts.graphql(request), { parse: "none" })
    .all("/trpc/*", ({ request }) => mounts.trpc(request), { parse: "none" })
    // Before the REST routes: their key check is global to routes mounted after them, and a signed link needs no key.
    .use(dashboardRoutes(svc.log, svc.storageConfig))
    .use(storageRoutes(svc))
    .use(connectionRoutes(svc, http))
    .use(arrivalRoutes(svc, http))
    .use(schemaRoutes(svc, http))
    .use(pipelineRoutes(svc, http))
    .use(runRoutes(svc, http))
    .use(outboundRoutes(svc, http))
    .use(fileRoutes(svc, http))
    .use(documentRoutes(svc, http))
    .use(webhookRoutes(svc, http))
    .use(notificationRoutes(svc, http))
    .use(auditRoutes(svc, http));
  // Every request, on every surface, is served in its request scope and counted (src/http/observe.ts).
  app.handle = observeRequests(svc, app.handle);
  routes = () =>
    app.routes.map((r) => ({ method: r.method, path: r.path, detail: r.hooks?.detail as DocumentedRoute["detail"] }));
  return app;
}

