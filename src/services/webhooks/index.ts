export { createWebhook } from "./create-webhook";
export { deleteWebhook } from "./delete-webhook";
export { type DeliveryRow, presentDelivery } from "./deliveries";
export { DeliveryPayload, deliverWebhook, WEBHOOK_DELIVERY_JOB } from "./deliver";
export { getWebhook } from "./get-webhook";
export { listDeliveries } from "./list-deliveries";
export { listWebhooks } from "./list-webhooks";
export { presentWebhook } from "./record";
export { redeliver } from "./redeliver";
export { rotateWebhookSecret } from "./rotate-secret";
export * from "./shapes";
export { subscribe } from "./subscribe";
export { unsubscribe } from "./unsubscribe";
export { updateWebhook } from "./update-webhook";
// Registers the `webhooks` run-event consumer.
import "./fan-out";
