import { and, eq } from "drizzle-orm";
import type { Reader } from "../../../db/client";
import type { connections, sftpServers } from "../../../db/pg/schema";
import { notFound } from "../../domain/errors";
import type { ServiceContext } from "../context";

export type ConnectionRow = typeof connections.$inferSelect;
export type ServerRow = typeof sftpServers.$inferSelect;
export interface ConnectionRecord {
  row: ConnectionRow;
  server: ServerRow | null;
}

export function selectConnections(ctx: ServiceContext, r: Reader = ctx.db.read) {
  const { connections: c, sftpServers: s } = ctx.db.t;
  return r.select({ row: c, server: s }).from(c).leftJoin(s, eq(s.id, c.sftpServerId));
}

/** A connection of the caller's workspace; any other id is a 404, whoever owns it. */
export async function loadConnection(
  ctx: ServiceContext,
  opts: { workspaceId: string; id: string },
  r: Reader = ctx.db.read,
): Promise<ConnectionRecord> {
  const c = ctx.db.t.connections;
  const [rec] = await selectConnections(ctx, r).where(and(eq(c.id, opts.id), eq(c.workspaceId, opts.workspaceId)));
  if (!rec) throw notFound("connection", opts.id);
  return rec;
}
