import type { NotifySettings } from "../../config";
import { createEmailNotifier } from "./email";
import type { NotifyChannel, Notifiers } from "./port";
import { createSlackNotifier } from "./slack";
import { createSmsNotifier } from "./sms";

export * from "./port";

/** The channels configuration enables; the others are null (their sends are recorded as failed, see notConfigured). */
export function createNotifiers(settings: NotifySettings): Notifiers {
  return {
    EMAIL: settings.email ? createEmailNotifier(settings.email) : null,
    SLACK: settings.slack ? createSlackNotifier(settings.slack) : null,
    SMS: settings.sms ? createSmsNotifier(settings.sms) : null,
  };
}

const SETTINGS: Record<NotifyChannel, string> = {
  EMAIL: "NOTIFY_SMTP_URL and NOTIFY_EMAIL_FROM",
  SLACK: "NOTIFY_SLACK_TOKEN",
  SMS: "NOTIFY_TWILIO_ACCOUNT_SID, NOTIFY_TWILIO_AUTH_TOKEN and NOTIFY_TWILIO_FROM",
};

/** What a send over an unconfigured channel records, and what start-up logs once. */
export function notConfigured(channel: NotifyChannel): string {
  return `${channel} notifications are not configured on this service (set ${SETTINGS[channel]})`;
}
