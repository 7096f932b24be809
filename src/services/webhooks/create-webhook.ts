import { randomBytes } from "node:crypto";
import { newId } from "../../domain/ids";
import { parseInput, withoutReadOnly } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { RUN_EVENT_TYPES } from "../run-path/announce/run-events";
import { presentWebhook, type WebhookRow } from "./record";
import { CreateWebhookInput, type CreatedWebhook, WEBHOOK_READ_ONLY, type WebhookKind } from "./shapes";
import { checkTargetOnSave } from "./targets";
import { type ChangedBy, fieldsOf, recordAudit } from "../audit";

/** Standard Webhooks secret format: `whsec_` + base64 of the key bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export async function createWebhook(ctx: ServiceContext, opts: CallOptions & { input: CreateWebhookInput }): Promise<CreatedWebhook> {
  const input = parseInput(CreateWebhookInput, withoutReadOnly(opts.input, WEBHOOK_READ_ONLY));
  await checkTargetOnSave(ctx, input.url, "url");
  return insertWebhook(ctx, {
    by: opts.actor,
    fields: fieldsOf(input),
    workspaceId: opts.actor.workspaceId,
    kind: "WEBHOOK",
    name: input.name,
    url: input.url,
    isActive: input.isActive,
    eventTypes: input.eventTypes,
    description: input.description,
  });
}

/** Stores a webhook of either kind with a new signing secret, and answers the secret this once. */
export async function insertWebhook(
  ctx: ServiceContext,
  opts: { by: ChangedBy; fields: string[]; workspaceId: string; kind: WebhookKind; name: string; url: string; isActive: boolean; eventTypes?: string[]; description?: string | null },
): Promise<CreatedWebhook> {
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  const row: WebhookRow = {
    id: newId("webhook"),
    workspaceId: opts.workspaceId,
    name: opts.name,
    url: opts.url,
    secretEnc: ctx.secrets.seal(secret),
    events: opts.eventTypes ?? [...RUN_EVENT_TYPES],
    isActive: opts.isActive,
    description: opts.description || null,
    kind: opts.kind,
    createdAt: now,
    updatedAt: now,
  };
  await ctx.db.tx(async (w) => {
    await w.insert(ctx.db.t.webhooks).values(row);
    const action = opts.kind === "WEBHOOK" ? "webhook.create" : "webhook.subscribe";
    await recordAudit(ctx, w, opts.by, { workspaceId: row.workspaceId, action, resourceType: "webhook", resourceId: row.id, fields: opts.fields });
  });
  return { ...presentWebhook(row), secret };
}
