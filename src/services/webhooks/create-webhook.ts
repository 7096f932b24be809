import { randomBytes } from "node:crypto";
import { newId } from "../../domain/ids";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { presentWebhook, type WebhookRow } from "./record";
import { CreateWebhookInput, type CreatedWebhook, WEBHOOK_READ_ONLY } from "./shapes";

/** Standard Webhooks secret format: `whsec_` + base64 of the key bytes. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export async function createWebhook(ctx: ServiceContext, opts: CallOptions & { input: CreateWebhookInput }): Promise<CreatedWebhook> {
  const input = parseInput(CreateWebhookInput, withoutReadOnly(opts.input, WEBHOOK_READ_ONLY));
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  const row: WebhookRow = {
    id: newId("webhook"),
    workspaceId: opts.actor.workspaceId,
    name: input.name,
    url: input.url,
    secretEnc: ctx.secrets.seal(secret),
    events: [],
    isActive: input.isActive,
    createdAt: now,
    updatedAt: now,
  };
  await ctx.db.tx((w) => w.insert(ctx.db.t.webhooks).values(row));
  return { ...presentWebhook(row), secret };
}
