import { eq } from "drizzle-orm";
import type { CallOptions, ServiceContext } from "../context";
import { newSigningSecret } from "./create-webhook";
import { loadWebhook, presentWebhook } from "./record";
import type { CreatedWebhook } from "./shapes";
import { recordAudit } from "../audit";

/**
 * Replaces the signing secret and answers the new one, once. The old secret
 * stops at once: every attempt from now on, retries of earlier events
 * included, is signed with the new one.
 */
export async function rotateWebhookSecret(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<CreatedWebhook> {
  const wh = ctx.db.t.webhooks;
  const secret = newSigningSecret();
  const row = await ctx.db.tx(async (w) => {
    const cur = await loadWebhook(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id }, w);
    const next = { ...cur, secretEnc: ctx.secrets.seal(secret), updatedAt: ctx.clock.now() };
    await w.update(wh).set({ secretEnc: next.secretEnc, updatedAt: next.updatedAt }).where(eq(wh.id, cur.id));
    await recordAudit(ctx, w, opts.actor, { workspaceId: cur.workspaceId, action: "webhook.rotateSecret", resourceType: "webhook", resourceId: cur.id, fields: ["secret"] });
    return next;
  });
  return { ...presentWebhook(row), secret };
}
