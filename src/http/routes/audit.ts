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
        description:
          "Every change (create, update, delete, key create/revoke, acknowledge, retry, redeliver, secret rotation, CLI workspace changes), newest first: " +
          "who, what (the names of the members changed, never their values), when, from which address, through which surface, and the request id. " +
          "Admin keys only (403 otherwise). Filters: `resourceType`, `resourceId`, `actor`, `action`, `from`, `to`.",
        query: audit.ListAuditEventsQuery,
        response: { pageOf: audit.AuditEvent },
      }),
    });
}
