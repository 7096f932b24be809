import { Elysia } from "elysia";
import type { ServiceContext } from "../../services/context";
import { DeleteResult, PageQuery } from "../../services/shared/shapes";
import * as webhooks from "../../services/webhooks";
import { callPlugin, type HttpOptions } from "../call";
import { describe, type RouteDescription } from "../openapi";
import { pagedList } from "./lists";

export function webhookRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Webhooks"] });
  return new Elysia({ name: "routes:webhooks" })
    .use(callPlugin(svc, http))
    .get("/webhooks", async ({ call, query }) => pagedList(await webhooks.listWebhooks(svc, { ...call, query }), webhooks.presentWebhook), {
      detail: doc({ summary: "List webhooks", query: PageQuery, response: { pageOf: webhooks.Webhook } }),
    })
    .post("/webhooks", ({ call, input }) => webhooks.createWebhook(svc, { ...call, input: input as never }), {
      detail: doc({
        summary: "Create a webhook",
        description: "The response carries the signing secret; it is never returned again.",
        body: webhooks.CreateWebhookInput,
        response: { one: webhooks.CreatedWebhook },
      }),
    })
    .get("/webhooks/:id", async ({ call, params }) => webhooks.presentWebhook(await webhooks.getWebhook(svc, { ...call, id: params.id })), {
      detail: doc({ summary: "Get a webhook", response: { one: webhooks.Webhook } }),
    })
    .patch(
      "/webhooks/:id",
      async ({ call, params, input }) => webhooks.presentWebhook(await webhooks.updateWebhook(svc, { ...call, id: params.id, input: input as never })),
      { detail: doc({ summary: "Update a webhook", body: webhooks.UpdateWebhookInput, response: { one: webhooks.Webhook } }) },
    )
    .delete("/webhooks/:id", ({ call, params }) => webhooks.deleteWebhook(svc, { ...call, id: params.id }), {
      detail: doc({ summary: "Delete a webhook", description: "Unlinks it from every pipeline first.", response: { one: DeleteResult } }),
    });
}
