import type { CallOptions, ServiceContext } from "../context";
import { loadWebhook, type WebhookRow } from "./record";

export function getWebhook(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<WebhookRow> {
  return loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
}
