import { Elysia } from "elysia";
import * as connections from "../../services/connections";
import type { ServiceContext } from "../../services/context";
import { DeleteResult } from "../../services/shared/shapes";
import { VERSION_RULES } from "../../domain/versions";
import { type Call, callPlugin, type HttpOptions, presenter } from "../call";
import { inputOf } from "../../transport/input";
import { describe, type RouteDescription, type RouteErrors } from "../openapi";
import { bareList } from "./lists";

const SAVE_ERRORS: RouteErrors = {
  not_found: "no SFTP server `sftpServerDataId`",
  conflict: "a connection with this `name` exists, or the `sftpUsername` is taken on the hosted SFTP server",
};

/** /connections, and the legacy /clients aliases with identical behaviour. */
export function connectionRoutes(svc: ServiceContext, http: HttpOptions) {
  const app = new Elysia({ name: "routes:connections" }).use(callPlugin(svc, http));
  // A connection from the read cache is presented once per version; never where the version returns credentials in clear.
  const presentOnce = presenter(
    (rec: Awaited<ReturnType<typeof connections.getConnection>>, version) => connections.presentConnection(svc, rec, version),
    (version) => !VERSION_RULES[version].returnsCredentials,
  );
  const present = (call: Call, rec: Awaited<ReturnType<typeof connections.getConnection>>) => presentOnce(rec, call.version);

  for (const base of ["/connections", "/clients"] as const) {
    const legacy = base === "/clients";
    const doc = (d: Omit<RouteDescription, "tags">) =>
      describe({ ...d, tags: [legacy ? "Clients (legacy)" : "Connections"], deprecated: legacy });
    app
      .get(
        base,
        async ({ call, query, set }) =>
          bareList(set, await connections.listConnections(svc, { ...call, query }), (rec) => present(call, rec)),
        { detail: doc({ summary: "List connections", query: connections.ListConnectionsQuery, response: { arrayOf: connections.Connection } }) },
      )
      .post(base, async ({ call, input }) => present(call, await connections.createConnection(svc, { ...call, input: inputOf(connections.CreateConnectionInput, input) })), {
        detail: doc({
          summary: "Create a connection",
          body: connections.CreateConnectionInput,
          response: { one: connections.Connection },
          errors: SAVE_ERRORS,
        }),
      })
      .get(`${base}/:id`, async ({ call, params }) => present(call, await connections.getConnection(svc, { ...call, id: params.id })), {
        detail: doc({ summary: "Get a connection", response: { one: connections.Connection } }),
      })
      .patch(
        `${base}/:id`,
        async ({ call, params, input }) =>
          present(call, await connections.updateConnection(svc, { ...call, id: params.id, input: inputOf(connections.UpdateConnectionInput, input) })),
        {
          detail: doc({
            summary: "Update a connection",
            body: connections.UpdateConnectionInput,
            response: { one: connections.Connection },
            errors: SAVE_ERRORS,
          }),
        },
      )
      .delete(`${base}/:id`, ({ call, params }) => connections.deleteConnection(svc, { ...call, id: params.id }), {
        detail: doc({
          summary: "Delete a connection",
          response: { one: DeleteResult },
          errors: { conflict: "pipelines use the connection" },
        }),
      })
      .post(`${base}/:id/test-connection`, ({ call, params }) => connections.testConnection(svc, { ...call, id: params.id }), {
        detail: doc({
          summary: "Test a connection",
          response: { one: connections.ConnectionTestResult },
        }),
      });
  }
  return app;
}
