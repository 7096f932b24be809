import { Elysia } from "elysia";
import * as arrivals from "../../services/arrivals";
import type { ServiceContext } from "../../services/context";
import { callPlugin, type HttpOptions } from "../call";
import { describe } from "../openapi";
import { pagedList } from "./lists";

/** What the transports (hosted SFTP, customer SFTP polls, e-mail) received for a connection, and what became of it. */
export function arrivalRoutes(svc: ServiceContext, http: HttpOptions) {
  return new Elysia({ name: "routes:arrivals" })
    .use(callPlugin(svc, http))
    .get(
      "/connections/:id/arrivals",
      async ({ call, params, query }) =>
        pagedList(await arrivals.listArrivals(svc, { ...call, connectionId: params.id, query }), arrivals.presentArrival),
      {
        detail: describe({
          tags: ["Connections"],
          summary: "List a connection's arrivals",
          query: arrivals.ListArrivalsQuery,
          response: { pageOf: arrivals.Arrival },
        }),
      },
    );
}
