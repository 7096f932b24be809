import { z } from "zod";
import { NOTIFY_CHANNELS, type NotifyChannel } from "../../adapters/notify/port";
import { Id, PageQuery } from "../shared/shapes";

export const NOTIFICATION_EVENT_TYPES = ["PIPELINE_RUN_FAILED", "PIPELINE_RUN_SUCCEEDED"] as const;
export type NotificationEventType = (typeof NOTIFICATION_EVENT_TYPES)[number];
export { NOTIFY_CHANNELS, type NotifyChannel };

export const SEND_STATUSES = ["pending", "sent", "failed"] as const;
export type SendStatus = (typeof SEND_STATUSES)[number];

/** A preference names at most this many recipients (each is one message per event). */
export const MAX_RECIPIENTS = 50;

const oneOf = (values: readonly string[]) => (i: { input?: unknown }) =>
  i.input === undefined ? "is required" : `must be one of ${values.join(", ")}`;

export const EventTypeShape = z.enum(NOTIFICATION_EVENT_TYPES, { error: oneOf(NOTIFICATION_EVENT_TYPES) }).meta({ id: "NotificationEventType" });
export const ChannelShape = z.enum(NOTIFY_CHANNELS, { error: oneOf(NOTIFY_CHANNELS) }).meta({ id: "NotificationChannel" });
export const SendStatusShape = z.enum(SEND_STATUSES, { error: oneOf(SEND_STATUSES) }).meta({ id: "NotificationSendStatus" });

const EMAIL = z.email();
/** Channel ids (C..., G... private, D... direct, U.../W... a user's direct messages). */
const SLACK_ID = /^[CGDUW][A-Z0-9]{6,20}$/;
/** Slack channel names are lower case: letters, digits, hyphens, underscores, periods; at most 80. */
const SLACK_NAME = /^#[\p{Ll}\p{Lo}\p{N}][\p{Ll}\p{Lo}\p{N}._-]{0,79}$/u;
const E164 = /^\+[1-9]\d{6,14}$/;

/** Why a recipient is not valid for the channel, or null. */
export function recipientProblem(channel: NotifyChannel, r: string): string | null {
  switch (channel) {
    case "EMAIL":
      return r.length <= 254 && EMAIL.safeParse(r).success ? null : `'${clip(r)}' is not an e-mail address (name@example.com)`;
    case "SLACK":
      return SLACK_ID.test(r) || SLACK_NAME.test(r)
        ? null
        : `'${clip(r)}' is not a Slack channel: give a channel id (C0123ABCD) or #channel-name (lower case letters, digits, -, _ and .)`;
    case "SMS":
      return E164.test(r) ? null : `'${clip(r)}' is not a phone number in E.164 form (+15551234567)`;
  }
}
const clip = (s: string) => (s.length > 60 ? `${s.slice(0, 57)}...` : s);

/** Same recipient: e-mail addresses compare without case. */
export const recipientKey = (channel: NotifyChannel, r: string) => (channel === "EMAIL" ? r.toLowerCase() : r);

const Recipients = z
  .array(z.string().trim().min(1, "must not be empty").max(254, "must be at most 254 characters"), {
    error: (i) => (i.input === undefined ? "is required" : "must be an array of strings"),
  })
  .max(MAX_RECIPIENTS, `must have at most ${MAX_RECIPIENTS} recipients`);

/**
 * One item of the PUT body. `recipients` is required and non-empty when
 * `isEnabled` is true, and ignored when it is false (the service drops it
 * before parsing, so a disabled item may carry anything there).
 */
export const NotificationPreferenceItem = z
  .strictObject({
    eventType: EventTypeShape,
    channel: ChannelShape,
    isEnabled: z.boolean({ error: (i) => (i.input === undefined ? "is required" : "must be true or false") }),
    recipients: Recipients.optional().meta({
      description: `Required and non-empty when isEnabled is true, ignored when false. EMAIL: addresses; SLACK: channel ids (C0123ABCD) or #channel-names; SMS: E.164 numbers (+15551234567). At most ${MAX_RECIPIENTS}, no duplicates.`,
    }),
    metadata: z.record(z.string(), z.unknown()).nullable().optional().meta({ description: "Free-form; kept when left out." }),
  })
  .superRefine((item, ctx) => {
    if (!item.isEnabled) return;
    if (item.recipients === undefined) {
      ctx.addIssue({ code: "custom", path: ["recipients"], message: "is required when isEnabled is true" });
      return;
    }
    if (item.recipients.length === 0) {
      ctx.addIssue({ code: "custom", path: ["recipients"], message: "must not be empty when isEnabled is true (an enabled preference needs a recipient)" });
      return;
    }
    const seen = new Map<string, number>();
    item.recipients.forEach((r, i) => {
      const problem = recipientProblem(item.channel, r);
      if (problem) ctx.addIssue({ code: "custom", path: ["recipients", i], message: problem });
      const key = recipientKey(item.channel, r);
      const first = seen.get(key);
      if (first !== undefined) ctx.addIssue({ code: "custom", path: ["recipients", i], message: `duplicates recipients[${first}]` });
      else seen.set(key, i);
    });
  })
  .meta({ id: "NotificationPreferenceItemInput" });
export type NotificationPreferenceItem = z.output<typeof NotificationPreferenceItem>;

/** Response members a client may send back unchanged in an item; ignored on input. */
export const PREFERENCE_READ_ONLY = ["id", "workspaceId", "clientId", "createdAt", "updatedAt"] as const;

export const PutNotificationPreferencesInput = z
  .strictObject({
    preferences: z
      .array(NotificationPreferenceItem, { error: (i) => (i.input === undefined ? "is required" : "must be an array") })
      .min(1, "must have at least 1 item")
      .max(NOTIFICATION_EVENT_TYPES.length * NOTIFY_CHANNELS.length, "must have at most 6 items (one per event type and channel)")
      .superRefine((items, ctx) => {
        const seen = new Map<string, number>();
        items.forEach((item, i) => {
          const key = `${item.eventType} ${item.channel}`;
          const first = seen.get(key);
          if (first !== undefined) {
            ctx.addIssue({ code: "custom", path: [i], message: `duplicates preferences[${first}] (${item.eventType} over ${item.channel}); send each pair once` });
          } else seen.set(key, i);
        });
      }),
  })
  .meta({ id: "PutNotificationPreferencesInput" });
export type PutNotificationPreferencesInput = z.input<typeof PutNotificationPreferencesInput>;

export const NotificationPreference = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    clientId: z.string().meta({ description: "The connection the preference belongs to." }),
    eventType: EventTypeShape,
    channel: ChannelShape,
    isEnabled: z.boolean(),
    recipients: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "NotificationPreference" });
export type NotificationPreference = z.output<typeof NotificationPreference>;

export const NotificationSend = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    clientId: z.string().meta({ description: "The run's connection." }),
    preferenceId: z.string(),
    eventId: z.string().meta({ description: "The run event that caused the send (one send per event, preference and recipient)." }),
    eventType: EventTypeShape,
    runId: z.string(),
    channel: ChannelShape,
    recipient: z.string(),
    status: SendStatusShape,
    attempts: z.number().int(),
    error: z.string().nullable().meta({ description: "The last attempt's error, if any." }),
    providerId: z.string().nullable().meta({ description: "The provider's message id: SMTP Message-ID, Slack message ts, Twilio message SID." }),
    createdAt: z.date(),
    updatedAt: z.date(),
    sentAt: z.date().nullable(),
  })
  .meta({
    id: "NotificationSend",
    description: "One message to one recipient about one run event. status pending: waiting for its first or next attempt; sent; failed: given up (error says why).",
  });
export type NotificationSend = z.output<typeof NotificationSend>;

/** `GET /notifications/sends`: newest first. */
export const ListSendsQuery = PageQuery.extend({
  clientId: Id.optional().meta({ description: "The run's connection." }),
  runId: Id.optional(),
  status: SendStatusShape.optional(),
  channel: ChannelShape.optional(),
  eventType: EventTypeShape.optional(),
});
export type ListSendsQuery = z.input<typeof ListSendsQuery>;
