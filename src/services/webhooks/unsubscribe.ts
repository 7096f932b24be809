import { and, eq, inArray } from "drizzle-orm";
import { AppError, notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { targetUrlOf, UnsubscribeInput, type UnsubscribeResult } from "./shapes";
import { recordAudit } from "../audit";

/**
 * Removes workspace-level PIPELINE_RUN_EVENT subscriptions: the one with the
 * given id, or every one with the given target URL. A pipeline webhook's id
 * is not found here (it is deleted with DELETE /webhooks/{id}). The log of
 * their deliveries stays.
 */
export async function unsubscribe(ctx: ServiceContext, opts: CallOptions & { input: UnsubscribeInput }): Promise<UnsubscribeResult> {
  const input = parseInput(UnsubscribeInput, opts.input ?? {});
  const { url, conflict } = targetUrlOf(input);
  if (conflict) throw new AppError("invalid_input", "targetUrl: the request names different URLs; send one");
  if (!input.id && !url) throw new AppError("invalid_input", "id: is required, or the subscription's targetUrl (also accepted as target_url, hookUrl, hook_url or url)");
  const wh = ctx.db.t.webhooks;
  return ctx.db.tx(async (w) => {
    const found = await w
      .select({ id: wh.id })
      .from(wh)
      .where(
        and(
          eq(wh.workspaceId, opts.actor.workspaceId),
          eq(wh.kind, "PIPELINE_RUN_EVENT"),
          input.id ? eq(wh.id, input.id) : undefined,
          url ? eq(wh.url, url) : undefined,
        ),
      );
    if (found.length === 0) throw notFound("subscription", input.id ?? url!);
    const ids = found.map((r) => r.id);
    await w.delete(wh).where(inArray(wh.id, ids));
    for (const id of ids) await recordAudit(ctx, w, opts.actor, { workspaceId: opts.actor.workspaceId, action: "webhook.unsubscribe", resourceType: "webhook", resourceId: id });
    return { ids, deleted: true as const };
  });
}
