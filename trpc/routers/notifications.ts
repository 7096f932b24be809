import { pagination } from "../../src/services/shared/shapes";
import * as notifications from "../../src/services/notifications";
import { ById, ByIdWith, input, procedure, router } from "../init";

/** A connection's notification preferences; `id` is the connection's id (`clientId` on REST), as every procedure names its target. */
export const notificationPreferencesRouter = router({
  get: procedure.input(ById).query(async ({ ctx, input: { id } }) =>
    (await notifications.getNotificationPreferences(ctx.svc, { actor: ctx.actor, clientId: id })).map(notifications.presentPreference),
  ),
  put: procedure.input(ByIdWith<notifications.PutNotificationPreferencesInput>()).mutation(async ({ ctx, input: { id, data } }) =>
    (await notifications.putNotificationPreferences(ctx.svc, { actor: ctx.actor, clientId: id, input: data })).map(notifications.presentPreference),
  ),
});

/** The record of notifications sent, being sent, or failed. */
export const notificationSendsRouter = router({
  list: procedure.input(input<notifications.ListSendsQuery | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await notifications.listNotificationSends(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(notifications.presentSend), pagination: pagination(page) };
  }),
});
