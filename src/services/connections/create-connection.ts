import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { loadConnection } from "./record";
import { connectionConflict, nextConnectionRow } from "./save";
import { connectionInput, CreateConnectionInput } from "./shapes";
import type { ConnectionRecord } from "./record";
import { fieldsOf, recordAudit } from "../audit";

export async function createConnection(
  ctx: ServiceContext,
  opts: CallOptions & { input: CreateConnectionInput },
): Promise<ConnectionRecord> {
  const input = parseInput(CreateConnectionInput, connectionInput(opts.input));
  const workspaceId = opts.actor.workspaceId;
  let attempted = { name: input.name, sftpUsername: input.sftpUsername ?? null };
  return ctx.db
    .tx(async (w) => {
      const row = await nextConnectionRow(ctx, w, { workspaceId, current: null, input });
      attempted = row;
      await w.insert(ctx.db.t.connections).values(row);
      await recordAudit(ctx, w, opts.actor, { workspaceId, action: "connection.create", resourceType: "connection", resourceId: row.id, fields: fieldsOf(input) });
      return loadConnection(ctx, { workspaceId, id: row.id }, w);
    })
    .catch((e) => connectionConflict(e, attempted));
}
