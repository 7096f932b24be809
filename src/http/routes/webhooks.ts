import { Elysia } from "elysia";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../../services/context";
import { DeleteResult } from "../../services/shared/shapes";
import * as webhooks from "../../services/webhooks";
import { isJsonContentType, readJsonBody } from "../../transport/body";
import { callPlugin, type HttpOptions } from "../call";
import { inputOf } from "../../transport/input";
import { describe, type RouteDescription } from "../openapi";
import { pagedList } from "./lists";

const ZAPIER = "/webhooks/zapier/pipeline-run-events";

export function webhookRoutes(svc: ServiceContext, http: HttpOptions) {
  const doc = (d: Omit<RouteDescription, "tags">) => describe({ ...d, tags: ["Webhooks"] });
  return new Elysia({ name: "routes:webhooks" })
    .use(callPlugin(svc, http))
    .get("/webhooks", async ({ call, query }) => pagedList(await webhooks.listWebhooks(svc, { ...call, query }), webhooks.presentWebhook), {
      detail: doc({ summary: "List webhooks", query: webhooks.WebhookListQuery, response: { pageOf: webhooks.Webhook } }),
    })
    .post("/webhooks", ({ call, input }) => webhooks.createWebhook(svc, { ...call, input: inputOf(webhooks.CreateWebhookInput, input) }), {
      detail: doc({
        summary: "Create a webhook",
        body: webhooks.CreateWebhookInput,
        response: { one: webhooks.CreatedWebhook },
        errors: { invalid_input: "a `url` on a loopback, private or link-local address (unless the service allows them)" },
      }),
    })
    .get(
      "/webhooks/deliveries",
      async ({ call, query }) => pagedList(await webhooks.listDeliveries(svc, { ...call, query }), webhooks.presentDelivery),
      {
        detail: doc({
          summary: "List webhook deliveries",
          query: webhooks.DeliveryQuery,
          response: { pageOf: webhooks.WebhookDelivery },
        }),
      },
    )
    .post(
      "/webhooks/deliveries/:id/redeliver",
      async ({ call, params }) => webhooks.presentDelivery(await webhooks.redeliver(svc, { ...call, id: params.id })),
      {
        detail: doc({
          summary: "Redeliver",
          response: { one: webhooks.WebhookDelivery },
          errors: { conflict: "the delivery's webhook was deleted or is inactive, or its event is no longer stored" },
        }),
      },
    )
    .post(`${ZAPIER}/subscribe`, ({ call, input }) => webhooks.subscribe(svc, { ...call, input: inputOf(webhooks.SubscribeInput, input) }), {
      detail: doc({
        summary: "Subscribe an automation platform to run events",
        body: webhooks.SubscribeInput,
        response: { one: webhooks.CreatedWebhook },
        errors: { invalid_input: "no target URL, or different ones under its aliases; a loopback, private or link-local target" },
      }),
    })
    .delete(
      `${ZAPIER}/unsubscribe`,
      async ({ call, query, request }) => {
        // DELETE bodies are not read by the call plugin; platforms send the id or URL in the body or the query.
        let body: unknown = {};
        if (request.body) {
          if (!isJsonContentType(request.headers.get("content-type"))) {
            throw new AppError("unsupported_media_type", `content-type: '${request.headers.get("content-type")}' is not accepted here; send application/json`);
          }
          body = await readJsonBody(request, http.maxJsonBodyBytes);
        }
        const input = { ...(body && typeof body === "object" && !Array.isArray(body) ? body : {}), ...query };
        return webhooks.unsubscribe(svc, { ...call, input });
      },
      {
        detail: doc({
          summary: "Unsubscribe an automation platform",
          query: webhooks.UnsubscribeInput,
          response: { one: webhooks.UnsubscribeResult },
          errors: {
            invalid_input: "neither `id` nor a target URL, or a JSON body that is malformed",
            not_found: "no subscription with that `id` or target URL",
            payload_too_large: "a JSON body over MAX_JSON_BODY_BYTES",
            unsupported_media_type: "a body that is not application/json",
          },
        }),
      },
    )
    .get("/webhooks/:id", async ({ call, params }) => webhooks.presentWebhook(await webhooks.getWebhook(svc, { ...call, id: params.id })), {
      detail: doc({ summary: "Get a webhook", response: { one: webhooks.Webhook } }),
    })
    .patch(
      "/webhooks/:id",
      async ({ call, params, input }) => webhooks.presentWebhook(await webhooks.updateWebhook(svc, { ...call, id: params.id, input: inputOf(webhooks.UpdateWebhookInput, input) })),
      {
        detail: doc({
          summary: "Update a webhook",
          body: webhooks.UpdateWebhookInput,
          response: { one: webhooks.Webhook },
          errors: { invalid_input: "a `url` on a loopback, private or link-local address (unless the service allows them)" },
        }),
      },
    )
    .post("/webhooks/:id/rotate-secret", ({ call, params }) => webhooks.rotateWebhookSecret(svc, { ...call, id: params.id }), {
      detail: doc({
        summary: "Rotate a webhook's signing secret",
        response: { one: webhooks.CreatedWebhook },
      }),
    })
    .delete("/webhooks/:id", ({ call, params }) => webhooks.deleteWebhook(svc, { ...call, id: params.id }), {
      detail: doc({
        summary: "Delete a webhook",
        response: { one: DeleteResult },
      }),
    });
}
