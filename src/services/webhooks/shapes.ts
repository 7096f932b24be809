import { z } from "zod";
import { RUN_EVENT_TYPES } from "../run-path/announce/run-events";
import { Id, Name, PageQuery, QueryBool } from "../shared/shapes";

const Url = z
  .url({
    protocol: /^https?$/,
    error: (i) => (i.input === undefined ? "is required" : "must be an absolute http:// or https:// URL"),
  })
  .max(2048, "must be at most 2048 characters");

/**
 * The run events a webhook can receive (src/services/run-path/announce/run-events.ts). Not a
 * named shape: its values are not GraphQL names, so it is a String there.
 */
export const WebhookEventType = z
  .enum(RUN_EVENT_TYPES, { error: `must be one of ${RUN_EVENT_TYPES.join(", ")}` })
  .describe("A run reached completed, delivered or failed, or was acknowledged.");

/**
 * A nullable string of bounded length. The bound also keeps it an `anyOf` in
 * JSON Schema, which the GraphQL generator reads as a nullable String (a bare
 * nullable string becomes `type: ["string", "null"]`, which it reads as JSON).
 */
const orNull = (max: number) => z.union([z.string().max(max, `must be at most ${max} characters`), z.null()]);

const EventTypes = z
  .array(WebhookEventType)
  .min(1, "must name at least one event type (set isActive to false to pause a webhook)")
  .max(RUN_EVENT_TYPES.length * 4, "has too many entries")
  .transform((types) => RUN_EVENT_TYPES.filter((t) => types.includes(t)));

const Description = z.union([z.string().trim().max(1000, "must be at most 1000 characters"), z.null()]);

/**
 * WEBHOOK: receives the events of the pipelines that link it (`webhookIds`).
 * PIPELINE_RUN_EVENT: a workspace-level hook registered by an automation
 * platform; receives every run event of the workspace.
 */
export const WEBHOOK_KINDS = ["WEBHOOK", "PIPELINE_RUN_EVENT"] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];
export const WebhookKindShape = z.enum(WEBHOOK_KINDS).meta({ id: "WebhookKind" });

export const CreateWebhookInput = z
  .strictObject({
    name: Name,
    url: Url,
    isActive: z.boolean().default(true),
    eventTypes: EventTypes.optional().meta({ description: "Default: every event type." }),
    description: Description.optional(),
  })
  .meta({ id: "CreateWebhookInput" });
export type CreateWebhookInput = z.input<typeof CreateWebhookInput>;

export const UpdateWebhookInput = z
  .strictObject({
    name: Name.optional(),
    url: Url.optional(),
    isActive: z.boolean().optional(),
    eventTypes: EventTypes.optional(),
    description: Description.optional(),
  })
  .meta({ id: "UpdateWebhookInput" });
export type UpdateWebhookInput = z.input<typeof UpdateWebhookInput>;

/** Response members a client may send back unchanged; ignored on input. */
export const WEBHOOK_READ_ONLY = ["id", "workspaceId", "kind", "createdAt", "updatedAt"] as const;

export const Webhook = z
  .object({
    id: z.string(),
    name: z.string(),
    url: z.string(),
    workspaceId: z.string(),
    isActive: z.boolean(),
    eventTypes: z.array(WebhookEventType),
    description: orNull(1000),
    kind: WebhookKindShape,
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "Webhook" });
export type Webhook = z.output<typeof Webhook>;

export const CreatedWebhook = Webhook.extend({
  secret: z.string().meta({ description: "Signing secret (whsec_...). Returned only here, once." }),
}).meta({ id: "CreatedWebhook" });
export type CreatedWebhook = z.output<typeof CreatedWebhook>;

export const WebhookListQuery = PageQuery.extend({
  kind: z.enum(WEBHOOK_KINDS, { error: `must be one of ${WEBHOOK_KINDS.join(", ")}` }).optional(),
});

export const DELIVERY_TRIGGERS = ["automatic", "manual"] as const;

export const WebhookDelivery = z
  .object({
    id: z.string(),
    webhookId: z.string(),
    eventId: z.string().meta({ description: "The event's id, sent as `webhook-id`: the same on every attempt." }),
    eventType: WebhookEventType,
    pipelineRunId: z.string(),
    url: z.string().meta({ description: "The target at the time of this attempt." }),
    attempt: z.number().int().meta({ description: "1, 2, ... over every attempt of this event to this webhook." }),
    trigger: z.enum(DELIVERY_TRIGGERS).meta({ id: "WebhookDeliveryTrigger", description: "automatic (first send and scheduled retries) or manual (redelivery)." }),
    success: z.boolean(),
    statusCode: z.number().int().nullable().meta({ description: "The receiver's HTTP status; null when none came (refused, unreachable, timed out)." }),
    durationMs: z.number().int(),
    responseExcerpt: orNull(1024).meta({ description: "The first 1 KiB of the receiver's answer." }),
    error: orNull(2000).meta({ description: "Why the attempt failed; null on success." }),
    createdAt: z.date(),
    nextAttemptAt: z.date().nullable().meta({ description: "When the next automatic attempt is due; null when none follows." }),
  })
  .meta({ id: "WebhookDelivery" });
export type WebhookDelivery = z.output<typeof WebhookDelivery>;

export const DeliveryQuery = PageQuery.extend({
  webhookId: Id.optional(),
  pipelineRunId: Id.optional(),
  eventId: Id.optional(),
  success: QueryBool.optional(),
});

/**
 * What automation platforms send to subscribe: the target under any of the
 * names they use (Zapier REST hooks: `targetUrl` / `target_url`; others
 * `hookUrl`, `hook_url`, `url`). Members a platform adds for itself are
 * ignored.
 */
const URL_MEMBERS = ["targetUrl", "target_url", "hookUrl", "hook_url", "url"] as const;
export const SubscribeInput = z
  .object({
    targetUrl: Url.optional(),
    target_url: Url.optional(),
    hookUrl: Url.optional(),
    hook_url: Url.optional(),
    url: Url.optional(),
    name: Name.optional(),
    eventTypes: EventTypes.optional(),
    description: Description.optional(),
  })
  .meta({ id: "SubscribeInput", description: "The target URL under one of targetUrl, target_url, hookUrl, hook_url or url." });
export type SubscribeInput = z.input<typeof SubscribeInput>;

/** The one target URL a subscribe or unsubscribe body names, or a message saying what is wrong. */
export function targetUrlOf(input: Partial<Record<(typeof URL_MEMBERS)[number], string | undefined>>): { url: string | null; conflict: boolean } {
  const given = [...new Set(URL_MEMBERS.map((m) => input[m]).filter((v): v is string => typeof v === "string"))];
  return { url: given[0] ?? null, conflict: given.length > 1 };
}

export const UnsubscribeInput = z
  .object({
    id: Id.optional(),
    targetUrl: z.string().optional(),
    target_url: z.string().optional(),
    hookUrl: z.string().optional(),
    hook_url: z.string().optional(),
    url: z.string().optional(),
  })
  .meta({ id: "UnsubscribeInput", description: "The subscription's id, or its target URL (every subscription with that URL)." });
export type UnsubscribeInput = z.input<typeof UnsubscribeInput>;

export const UnsubscribeResult = z
  .object({ ids: z.array(z.string()), deleted: z.literal(true) })
  .meta({ id: "UnsubscribeResult" });
export type UnsubscribeResult = z.output<typeof UnsubscribeResult>;
