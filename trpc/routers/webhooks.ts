import type { z } from "zod";
import { pagination } from "../../src/services/shared/shapes";
import * as webhooks from "../../src/services/webhooks";
import { ById, ByIdWith, input, procedure, router } from "../init";

/** What a typed client may send; the service checks the values. */
type ListInput = z.input<typeof webhooks.WebhookListQuery>;
type DeliveryListInput = z.input<typeof webhooks.DeliveryQuery>;

export const webhooksRouter = router({
  list: procedure.input(input<ListInput | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await webhooks.listWebhooks(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(webhooks.presentWebhook), pagination: pagination(page) };
  }),
  get: procedure.input(ById).query(async ({ ctx, input: { id } }) => webhooks.presentWebhook(await webhooks.getWebhook(ctx.svc, { actor: ctx.actor, id }))),
  create: procedure
    .input(input<webhooks.CreateWebhookInput>())
    .mutation(({ ctx, input: data }) => webhooks.createWebhook(ctx.svc, { actor: ctx.actor, input: data })),
  update: procedure
    .input(ByIdWith<webhooks.UpdateWebhookInput>())
    .mutation(async ({ ctx, input: { id, data } }) => webhooks.presentWebhook(await webhooks.updateWebhook(ctx.svc, { actor: ctx.actor, id, input: data }))),
  delete: procedure.input(ById).mutation(({ ctx, input: { id } }) => webhooks.deleteWebhook(ctx.svc, { actor: ctx.actor, id })),
  /** The new signing secret, answered once. */
  rotateSecret: procedure.input(ById).mutation(({ ctx, input: { id } }) => webhooks.rotateWebhookSecret(ctx.svc, { actor: ctx.actor, id })),
  deliveries: procedure.input(input<DeliveryListInput | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await webhooks.listDeliveries(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items.map(webhooks.presentDelivery), pagination: pagination(page) };
  }),
  redeliver: procedure
    .input(ById)
    .mutation(async ({ ctx, input: { id } }) => webhooks.presentDelivery(await webhooks.redeliver(ctx.svc, { actor: ctx.actor, id }))),
  /** Automation platforms: a workspace-level PIPELINE_RUN_EVENT hook. */
  subscribe: procedure
    .input(input<webhooks.SubscribeInput>())
    .mutation(({ ctx, input: data }) => webhooks.subscribe(ctx.svc, { actor: ctx.actor, input: data })),
  unsubscribe: procedure
    .input(input<webhooks.UnsubscribeInput>())
    .mutation(({ ctx, input: data }) => webhooks.unsubscribe(ctx.svc, { actor: ctx.actor, input: data })),
});
