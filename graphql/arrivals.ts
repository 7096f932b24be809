import * as arrivals from "../src/services/arrivals";
import { defined } from "./args";
import { builder } from "./builder";
import { enumNamed, outputType } from "./from-zod";
import { pageOf, paged } from "./page";

/**
 * What the transports received for a connection, and what became of it.
 * Types are generated inside the fields callback (at schema build time), so
 * this module may be imported before the one that first reads the shapes.
 */
builder.queryFields((t) => ({
  arrivals: t.field({
    nullable: true,
    type: pageOf("Arrival", outputType(arrivals.Arrival)),
    description: "A connection's arrivals (files and e-mails its transports received), newest first.",
    args: {
      connectionId: t.arg.id({ required: true }),
      page: t.arg.int(),
      limit: t.arg.int(),
      outcome: t.arg({ type: enumNamed("ArrivalOutcome") }),
    },
    resolve: async (_, { connectionId, ...args }, { svc, actor }) =>
      paged(await arrivals.listArrivals(svc, { actor, connectionId: String(connectionId), query: defined(args) }), arrivals.presentArrival),
  }),
}));
