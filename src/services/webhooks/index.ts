export { createWebhook } from "./create-webhook";
export { deleteWebhook, getWebhook, listWebhooks, updateWebhook } from "./manage-webhooks";
export { presentWebhook } from "./record";
export * from "./shapes";
