/**
 * Notification preferences (per connection: which run events go to whom over
 * EMAIL, SLACK or SMS) and their delivery; fan-out.ts is the run-event
 * consumer that services/run-path/announce lists. docs/decisions/notifications.md.
 */
export { fanOutRunEvent, notificationEventOf } from "./fan-out";
export { listNotificationSends } from "./list-sends";
export { getNotificationPreferences, putNotificationPreferences } from "./preferences";
export { type PreferenceRow, presentPreference, presentSend, type SendRow } from "./record";
export { deliverSend, giveUpSend, NOTIFY_SEND_JOB, reportNotifyChannels, SEND_ATTEMPTS, SendPayload } from "./send";
export * from "./shapes";
export { render, type RunFacts } from "./templates";
