import { z } from "zod";
import * as arrivals from "../../src/services/arrivals";
import { pagination } from "../../src/services/shared/shapes";
import { input, procedure, router } from "../init";

/** What a typed client may send; the service checks the filter values. */
type ListInput = arrivals.ListArrivalsQuery & { connectionId: string };

/** The connection's id; the other members are the list's filters. */
const ByConnection = z.looseObject({ connectionId: z.string({ error: "is required" }).min(1, "must not be empty") });

export const arrivalsRouter = router({
  /** A connection's arrivals, newest first (`outcome` filters). */
  list: procedure.input(input<ListInput>()).query(async ({ ctx, input: raw }) => {
    const { connectionId, ...query } = ByConnection.parse(raw ?? {});
    const page = await arrivals.listArrivals(ctx.svc, { actor: ctx.actor, connectionId, query });
    return { data: page.items.map(arrivals.presentArrival), pagination: pagination(page) };
  }),
});
