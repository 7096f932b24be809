import { z } from "zod";
import { Name } from "../shared/shapes";

const Url = z
  .url({
    protocol: /^https?$/,
    error: (i) => (i.input === undefined ? "is required" : "must be an absolute http:// or https:// URL"),
  })
  .max(2048, "must be at most 2048 characters");

export const CreateWebhookInput = z
  .strictObject({ name: Name, url: Url, isActive: z.boolean().default(true) })
  .meta({ id: "CreateWebhookInput" });
export type CreateWebhookInput = z.input<typeof CreateWebhookInput>;

export const UpdateWebhookInput = z
  .strictObject({ name: Name.optional(), url: Url.optional(), isActive: z.boolean().optional() })
  .meta({ id: "UpdateWebhookInput" });
export type UpdateWebhookInput = z.input<typeof UpdateWebhookInput>;

/** Response members a client may send back unchanged; ignored on input. */
export const WEBHOOK_READ_ONLY = ["id", "workspaceId", "createdAt", "updatedAt"] as const;

export const Webhook = z
  .object({
    id: z.string(),
    name: z.string(),
    url: z.string(),
    workspaceId: z.string(),
    isActive: z.boolean(),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "Webhook" });
export type Webhook = z.output<typeof Webhook>;

export const CreatedWebhook = Webhook.extend({
  secret: z.string().meta({ description: "Signing secret (whsec_...). Returned only here, once." }),
}).meta({ id: "CreatedWebhook" });
export type CreatedWebhook = z.output<typeof CreatedWebhook>;
