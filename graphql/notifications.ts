import * as notifications from "../src/services/notifications";
import { defined } from "./args";
import { builder } from "./builder";
import { enumNamed, inputType, outputType } from "./from-zod";
import { pageOf, paged } from "./page";

/**
 * Notification preferences of a connection and the record of sends. Types
 * are made on first use (inside the field callbacks), when every named shape
 * is registered.
 */
const makeTypes = () => ({
  Preference: outputType(notifications.NotificationPreference),
  SendPage: pageOf("NotificationSend", outputType(notifications.NotificationSend)),
});
let types: ReturnType<typeof makeTypes> | null = null;
const t0 = () => (types ??= makeTypes());

builder.queryFields((t) => ({
  notificationPreferences: t.field({
    nullable: true,
    type: [t0().Preference],
    description: "A connection's notification preferences, by event type and channel.",
    args: { id: t.arg.id({ required: true, description: "The connection (clientId on REST)." }) },
    resolve: async (_, { id }, { svc, actor }) =>
      (await notifications.getNotificationPreferences(svc, { actor, clientId: String(id) })).map(notifications.presentPreference),
  }),
  notificationSends: t.field({
    nullable: true,
    type: t0().SendPage,
    description: "Notifications sent, being sent, or failed, newest first.",
    args: {
      page: t.arg.int(),
      limit: t.arg.int(),
      clientId: t.arg.id({ description: "The run's connection." }),
      runId: t.arg.id(),
      status: t.arg({ type: enumNamed("NotificationSendStatus") }),
      channel: t.arg({ type: enumNamed("NotificationChannel") }),
      eventType: t.arg({ type: enumNamed("NotificationEventType") }),
    },
    resolve: async (_, args, { svc, actor }) =>
      paged(await notifications.listNotificationSends(svc, { actor, query: defined(args) }), notifications.presentSend),
  }),
}));

builder.mutationFields((t) => ({
  upsertNotificationPreferences: t.field({
    nullable: true,
    type: [t0().Preference],
    description:
      "Upserts each item on (eventType, channel); recipients are required and non-empty when isEnabled is true, ignored when false. Returns all of the connection's preferences.",
    args: {
      id: t.arg.id({ required: true, description: "The connection (clientId on REST)." }),
      input: t.arg({ type: inputType(notifications.PutNotificationPreferencesInput), required: true }),
    },
    resolve: async (_, { id, input }, { svc, actor }) =>
      (await notifications.putNotificationPreferences(svc, { actor, clientId: String(id), input })).map(notifications.presentPreference),
  }),
}));
