import { Elysia } from "elysia";
import * as notifications from "../../services/notifications";
import type { ServiceContext } from "../../services/context";
import { callPlugin, type HttpOptions } from "../call";
import { describe, type RouteDescription } from "../openapi";
import { pagedList } from "./lists";

/** Notification preferences per connection, and the record of every notification sent. Same under both API versions (additive). */
export function notificationRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Notifications"] });
  const present = (rows: notifications.PreferenceRow[]) => rows.map(notifications.presentPreference);
  return new Elysia({ name: "routes:notifications" })
    .use(callPlugin(svc, http))
    .get(
      "/notifications/preferences/:clientId",
      async ({ call, params }) => present(await notifications.getNotificationPreferences(svc, { ...call, clientId: params.clientId })),
      { detail: doc({ summary: "A connection's notification preferences", response: { arrayOf: notifications.NotificationPreference } }) },
    )
    .put(
      "/notifications/preferences/:clientId",
      async ({ call, params, input }) =>
        present(await notifications.putNotificationPreferences(svc, { ...call, clientId: params.clientId, input })),
      {
        detail: doc({
          summary: "Set a connection's notification preferences",
          body: notifications.PutNotificationPreferencesInput,
          response: { arrayOf: notifications.NotificationPreference },
        }),
      },
    )
    .get(
      "/notifications/sends",
      async ({ call, query }) => pagedList(await notifications.listNotificationSends(svc, { ...call, query }), notifications.presentSend),
      {
        detail: doc({
          summary: "Notifications sent, being sent, or failed",
          query: notifications.ListSendsQuery,
          response: { pageOf: notifications.NotificationSend },
        }),
      },
    );
}
