import * as audit from "../../src/services/audit";
import { pagination } from "../../src/services/shared/shapes";
import { input, procedure, router } from "../init";

/** The workspace's audit log (admin keys only); the service checks the filters. */
export const auditRouter = router({
  list: procedure.input(input<audit.ListAuditEventsQuery | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await audit.listAuditEvents(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(audit.presentAuditEvent), pagination: pagination(page) };
  }),
});
