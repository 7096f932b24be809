import { parseInput } from "../../domain/validation";
import { loadConnection } from "../connections/record";
import type { CallOptions, ServiceContext } from "../context";
import { type ArrivalRow, listArrivalRows } from "../run-path/ingest/inbound";
import type { Page } from "../shared/shapes";
import { ListArrivalsQuery } from "./shapes";

/** A connection's arrivals, newest first; another workspace's connection is a 404. */
export async function listArrivals(
  ctx: ServiceContext,
  opts: CallOptions & { connectionId: string; query?: Record<string, unknown> },
): Promise<Page<ArrivalRow>> {
  const q = parseInput(ListArrivalsQuery, opts.query ?? {});
  const workspaceId = opts.actor.workspaceId;
  await loadConnection(ctx, { workspaceId, id: opts.connectionId });
  const { rows, total } = await listArrivalRows(ctx, {
    workspaceId,
    connectionId: opts.connectionId,
    outcome: q.outcome,
    limit: q.limit,
    offset: (q.page - 1) * q.limit,
  });
  return { items: rows, total, page: q.page, limit: q.limit };
}
