import { Elysia } from "elysia";
import * as audit from "../../services/audit";
import type { ServiceContext } from "../../services/context";
import { callPlugin, type HttpOptions } from "../call";
import { describe } from "../openapi";
import { pagedList } from "./lists";

/** The workspace's audit log: read only, admin keys only. */
export function auditRoutes(svc: ServiceContext, http: HttpOptions) {
  return new Elysia({ name: "routes:audit" })
    .use(callPlugin(svc, http))
    .get("/audit-events", async ({ call, query }) => pagedList(await audit.listAuditEvents(svc, { ...call, query }), audit.presentAuditEvent), {
      detail: describe({
        tags: ["Audit log"],
        summary: "List audit events",
        query: audit.ListAuditEventsQuery,
        response: { pageOf: audit.AuditEvent },
      }),
    });
}
