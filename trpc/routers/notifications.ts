import { z } from "zod";
import { pagination } from "../../src/services/shared/shapes";
import * as notifications from "../../src/services/notifications";
import { input, procedure, router } from "../init";

const ByClient = z.object({ clientId: z.string().min(1, "must not be empty") });
const PutInput = z.object({
  clientId: z.string().min(1, "must not be empty"),
  data: z.custom<notifications.PutNotificationPreferencesInput>((v) => v !== undefined, "is required"),
});

/** Notification preferences per connection (`clientId`: the connection id) and the record of sends. */
export const notificationsRouter = router({
  preferences: router({
    get: procedure.input(ByClient).query(async ({ ctx, input: { clientId } }) =>
      (await notifications.getNotificationPreferences(ctx.svc, { actor: ctx.actor, clientId })).map(notifications.presentPreference),
    ),
    put: procedure.input(PutInput).mutation(async ({ ctx, input: { clientId, data } }) =>
      (await notifications.putNotificationPreferences(ctx.svc, { actor: ctx.actor, clientId, input: data })).map(notifications.presentPreference),
    ),
  }),
  sends: procedure.input(input<notifications.ListSendsQuery | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await notifications.listNotificationSends(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(notifications.presentSend), pagination: pagination(page) };
  }),
});
