import { z } from "zod";
import { QueryTime } from "../runs/shapes";
import { Id, PageQuery } from "../shared/shapes";
import { AuditActor } from "../../domain/actors";

// The actor is stored with pipeline versions too (db/), so it lives in src/domain; re-exported here.
export { AUDIT_ACTOR_TYPES, AuditActor } from "../../domain/actors";

export const AUDIT_SURFACES = ["rest", "graphql", "trpc", "cli"] as const;

/** `GET /audit-events`: newest first. */
export const ListAuditEventsQuery = PageQuery.extend({
  resourceType: z.string().max(50, "must be at most 50 characters").optional().meta({ description: "e.g. connection, pipeline, webhook, apiKey." }),
  resourceId: Id.optional().meta({ description: "One resource's records." }),
  actor: z.string().max(100, "must be at most 100 characters").optional().meta({ description: "An API key's id, a person's id (`user_...`), or `cli`." }),
  action: z.string().max(60, "must be at most 60 characters").optional().meta({ description: "e.g. `pipeline.update`, `apiKey.revoke`, `session.logIn`." }),
  from: QueryTime(false).optional().meta({ description: "Records at or after (ISO 8601 date or date-time)." }),
  to: QueryTime(true).optional().meta({ description: "Records at or before; a date alone covers that whole day." }),
}).superRefine((q, ctx) => {
  if (q.from && q.to && q.from.getTime() > q.to.getTime()) ctx.addIssue({ code: "custom", path: ["to"], message: "must not be before from" });
});
export type ListAuditEventsQuery = z.input<typeof ListAuditEventsQuery>;

export const AuditEvent = z
  .object({
    id: z.string(),
    action: z.string().meta({ description: "`<resourceType>.<verb>`: create, update, delete, revoke, acknowledge, retry, redeliver, rotateSecret, ..." }),
    resourceType: z.string(),
    resourceId: z.string(),
    fields: z.array(z.string()).meta({ description: "Names of the members the change set; never their values." }),
    actor: AuditActor,
    surface: z.enum(AUDIT_SURFACES).meta({ id: "AuditSurface" }),
    address: z.string().optional().meta({ description: "The client's address, when known." }),
    requestId: z.string().optional(),
    createdAt: z.date(),
  })
  .meta({ id: "AuditEvent", description: "One change: who made it, to what, when, from where and through which surface." });
export type AuditEvent = z.output<typeof AuditEvent>;
