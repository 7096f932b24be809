import * as webhooks from "../src/services/webhooks";
import { defined } from "./args";
import { builder } from "./builder";
import { inputType, outputType } from "./from-zod";
import { pageOf, paged } from "./page";

/**
 * Webhook deliveries, secret rotation and automation-platform subscriptions.
 * (Webhook create/read/update/delete are in schema.ts with the other resources.)
 */

const Delivery = outputType(webhooks.WebhookDelivery);
const DeliveryPage = pageOf("WebhookDelivery", Delivery);
const Created = outputType(webhooks.CreatedWebhook);

builder.queryFields((t) => ({
  webhookDeliveries: t.field({
    nullable: true,
    type: DeliveryPage,
    description: "Every delivery attempt of the workspace, newest first.",
    args: {
      page: t.arg.int(),
      limit: t.arg.int(),
      webhookId: t.arg.id(),
      pipelineRunId: t.arg.id(),
      eventId: t.arg.id(),
      success: t.arg.boolean(),
    },
    resolve: async (_, args, { svc, actor }) => paged(await webhooks.listDeliveries(svc, { actor, query: defined(args) }), webhooks.presentDelivery),
  }),
}));

builder.mutationFields((t) => ({
  rotateWebhookSecret: t.field({
    nullable: true,
    type: Created,
    description: "Answers the new signing secret, once; the old one stops signing at once.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_, { id }, { svc, actor }) => webhooks.rotateWebhookSecret(svc, { actor, id: String(id) }),
  }),
  redeliverWebhookDelivery: t.field({
    nullable: true,
    type: Delivery,
    description: "Sends the delivery's event again now and answers the new attempt.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => webhooks.presentDelivery(await webhooks.redeliver(svc, { actor, id: String(id) })),
  }),
  subscribePipelineRunEvents: t.field({
    nullable: true,
    type: Created,
    description: "Registers a workspace-level PIPELINE_RUN_EVENT hook for an automation platform.",
    args: { input: t.arg({ type: inputType(webhooks.SubscribeInput), required: true }) },
    resolve: (_, { input }, { svc, actor }) => webhooks.subscribe(svc, { actor, input }),
  }),
  unsubscribePipelineRunEvents: t.field({
    nullable: true,
    type: outputType(webhooks.UnsubscribeResult),
    description: "Removes the PIPELINE_RUN_EVENT hook with this id, or every one with this target URL.",
    args: { input: t.arg({ type: inputType(webhooks.UnsubscribeInput), required: true }) },
    resolve: (_, { input }, { svc, actor }) => webhooks.unsubscribe(svc, { actor, input: defined(input as Record<string, unknown>) }),
  }),
}));

