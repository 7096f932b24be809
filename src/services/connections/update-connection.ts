import { eq } from "drizzle-orm";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { type ConnectionRecord, loadConnection } from "./record";
import { connectionConflict, dropServerIfUnused, nextConnectionRow } from "./save";
import { connectionInput, UpdateConnectionInput } from "./shapes";
import { fieldsOf, recordAudit } from "../audit";

/** Partial update: members left out keep their value, `null` clears one, `name` is required. */
export async function updateConnection(
  ctx: ServiceContext,
  opts: CallOptions & { id: string; input: UpdateConnectionInput },
): Promise<ConnectionRecord> {
  const input = parseInput(UpdateConnectionInput, connectionInput(opts.input));
  const workspaceId = opts.actor.workspaceId;
  const c = ctx.db.t.connections;
  let attempted = { name: input.name, sftpUsername: input.sftpUsername ?? null };
  return ctx.db
    .tx(async (w) => {
      const current = await loadConnection(ctx, { workspaceId, id: opts.id }, w);
      const row = await nextConnectionRow(ctx, w, { workspaceId, current, input });
      attempted = row;
      await w.update(c).set(row).where(eq(c.id, row.id));
      await recordAudit(ctx, w, opts.actor, { workspaceId, action: "connection.update", resourceType: "connection", resourceId: row.id, fields: fieldsOf(input) });
      if (current.row.sftpServerId !== row.sftpServerId) await dropServerIfUnused(ctx, w, current.row.sftpServerId);
      return loadConnection(ctx, { workspaceId, id: row.id }, w);
    })
    .catch((e) => connectionConflict(e, attempted));
}
