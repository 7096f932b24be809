import { and, desc, eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import { loadConnection } from "../connections/record";
import type { CallOptions, ServiceContext } from "../context";
import type { ArrivalOutcome, ArrivalRow } from "../run-path/ingest/inbound";
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

/** A connection's arrivals, newest first (for the API; the caller checks the connection belongs to the workspace). */
export async function listArrivalRows(
  ctx: ServiceContext,
  opts: { workspaceId: string; connectionId: string; outcome?: ArrivalOutcome; limit: number; offset: number },
): Promise<{ rows: ArrivalRow[]; total: number }> {
  const a = ctx.db.t.arrivals;
  const where = and(eq(a.workspaceId, opts.workspaceId), eq(a.connectionId, opts.connectionId), opts.outcome ? eq(a.outcome, opts.outcome) : undefined);
  const [rows, total] = await Promise.all([
    ctx.db.read.select().from(a).where(where).orderBy(desc(a.createdAt), desc(a.id)).limit(opts.limit).offset(opts.offset),
    ctx.db.read.$count(a, where),
  ]);
  return { rows, total };
}
