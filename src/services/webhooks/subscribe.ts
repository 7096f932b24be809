import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { insertWebhook } from "./create-webhook";
import { type CreatedWebhook, SubscribeInput, targetUrlOf } from "./shapes";
import { checkTargetOnSave } from "./targets";
import { fieldsOf } from "../audit";

/**
 * An automation platform (Zapier REST hooks and the like) subscribes a
 * target URL to every run event of the workspace: a webhook of kind
 * PIPELINE_RUN_EVENT, signed, retried and logged like any other. Answers it
 * with its id (the platform keeps it to unsubscribe) and its signing secret,
 * once. Subscribing the same URL twice makes two subscriptions, as two zaps
 * on one URL are two subscribers.
 */
export async function subscribe(ctx: ServiceContext, opts: CallOptions & { input: SubscribeInput }): Promise<CreatedWebhook> {
  const input = parseInput(SubscribeInput, opts.input ?? {});
  const { url, conflict } = targetUrlOf(input);
  if (conflict) throw new AppError("invalid_input", "targetUrl: the body names different URLs under targetUrl, target_url, hookUrl, hook_url or url; send one");
  if (!url) throw new AppError("invalid_input", "targetUrl: is required (also accepted as target_url, hookUrl, hook_url or url)");
  await checkTargetOnSave(ctx, url, "targetUrl");
  return insertWebhook(ctx, {
    by: opts.actor,
    fields: fieldsOf(input),
    workspaceId: opts.actor.workspaceId,
    kind: "PIPELINE_RUN_EVENT",
    name: input.name ?? `Automation subscription (${new URL(url).host})`,
    url,
    isActive: true,
    eventTypes: input.eventTypes,
    description: input.description,
  });
}
