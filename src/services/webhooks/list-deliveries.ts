import { and, desc, eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import type { Page } from "../shared/shapes";
import type { DeliveryRow } from "./deliveries";
import { DeliveryQuery } from "./shapes";

/**
 * Every attempt of the workspace, newest first; filters: webhookId,
 * pipelineRunId, eventId, success. A webhook that was deleted keeps its
 * attempts here, so its id still filters.
 */
export async function listDeliveries(ctx: ServiceContext, opts: CallOptions & { query?: Record<string, unknown> }): Promise<Page<DeliveryRow>> {
  const q = parseInput(DeliveryQuery, opts.query ?? {});
  const d = ctx.db.t.webhookDeliveries;
  const filter = and(
    eq(d.workspaceId, opts.actor.workspaceId),
    q.webhookId ? eq(d.webhookId, q.webhookId) : undefined,
    q.pipelineRunId ? eq(d.pipelineRunId, q.pipelineRunId) : undefined,
    q.eventId ? eq(d.eventId, q.eventId) : undefined,
    q.success === undefined ? undefined : eq(d.success, q.success),
  );
  const [items, total] = await Promise.all([
    ctx.db.read
      .select()
      .from(d)
      .where(filter)
      .orderBy(desc(d.createdAt), desc(d.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    ctx.db.read.$count(d, filter),
  ]);
  return { items, total, page: q.page, limit: q.limit };
}
