import type { z } from "zod";
import * as connections from "../../src/services/connections";
import { pagination } from "../../src/services/shared/shapes";
import { ById, ByIdWith, input, procedure, router } from "../init";

/** What a typed client may filter by; the service checks the values. */
type ListInput = z.input<typeof connections.ListConnectionsQuery>;

export const connectionsRouter = router({
  list: procedure.input(input<ListInput | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await connections.listConnections(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map((r) => connections.presentConnection(ctx.svc, r)), pagination: pagination(page) };
  }),
  get: procedure.input(ById).query(async ({ ctx, input: { id } }) => connections.presentConnection(ctx.svc, await connections.getConnection(ctx.svc, { actor: ctx.actor, id }))),
  create: procedure
    .input(input<connections.CreateConnectionInput>())
    .mutation(async ({ ctx, input: data }) => connections.presentConnection(ctx.svc, await connections.createConnection(ctx.svc, { actor: ctx.actor, input: data }))),
  update: procedure
    .input(ByIdWith<connections.UpdateConnectionInput>())
    .mutation(async ({ ctx, input: { id, data } }) =>
      connections.presentConnection(ctx.svc, await connections.updateConnection(ctx.svc, { actor: ctx.actor, id, input: data })),
    ),
  delete: procedure.input(ById).mutation(({ ctx, input: { id } }) => connections.deleteConnection(ctx.svc, { actor: ctx.actor, id })),
  test: procedure.input(ById).mutation(({ ctx, input: { id } }) => connections.testConnection(ctx.svc, { actor: ctx.actor, id })),
});
