import * as audit from "../src/services/audit";
import { defined } from "./args";
import { builder } from "./builder";
import { outputType } from "./from-zod";
import { pageOf, paged } from "./page";

/** The workspace's audit log (admin keys only), as `GET /audit-events`. */
builder.queryFields((t) => ({
  auditEvents: t.field({
    type: pageOf("AuditEvent", outputType(audit.AuditEvent)),
    description: "Who changed what, when, from where and through which surface; newest first. Admin keys only.",
    args: {
      page: t.arg.int(),
      limit: t.arg.int(),
      resourceType: t.arg.string({ description: "e.g. connection, pipeline, webhook, apiKey." }),
      resourceId: t.arg.id(),
      actor: t.arg.string({ description: "An API key's id, a person's id (`user_...`), or `cli`." }),
      action: t.arg.string({ description: "e.g. `pipeline.update`." }),
      from: t.arg.string({ description: "Records at or after (ISO 8601 date or date-time)." }),
      to: t.arg.string({ description: "Records at or before; a date alone covers that whole day." }),
    },
    resolve: async (_, args, { svc, actor }) => paged(await audit.listAuditEvents(svc, { actor, query: defined(args) }), audit.presentAuditEvent),
  }),
}));
