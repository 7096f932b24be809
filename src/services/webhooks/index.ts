export { createWebhook } from "./create-webhook";
export { deleteWebhook } from "./delete-webhook";
export { getWebhook } from "./get-webhook";
export { listWebhooks } from "./list-webhooks";
export { presentWebhook } from "./record";
export * from "./shapes";
export { updateWebhook } from "./update-webhook";
