import type { ObjectInfo } from "../../adapters/storage/port";
import type { Actor, ServiceContext } from "../context";
import { enqueueArrival } from "../run-path/doors/space-arrival";
import { isArrivalPath } from "../space-files/paths";
import type { Space } from "./space";

/**
 * One rule for every door (DESIGN.md): a file that gets a final name in a
 * connection's inbound folder through the documents API (an upload completed
 * or confirmed, a move or rename from outside the folder) arrives exactly as
 * a file closed there over the hosted SFTP server does: the same durable
 * job, the same runs, the same arrival record (transport `documents`).
 * docs/decisions/documents.md, "Arrivals".
 */
export async function arriveIfInbound(ctx: ServiceContext, space: Space, path: string, info: Pick<ObjectInfo, "size" | "etag">, opts: { from?: string } = {}): Promise<boolean> {
  if (!isArrivalPath(path)) return false;
  if (opts.from !== undefined && isArrivalPath(opts.from)) return false;
  await enqueueArrival(ctx, {
    workspaceId: space.workspaceId,
    connectionId: space.connectionId,
    door: "documents",
    actor: actorName(space.actor),
    path,
    size: info.size,
    etag: info.etag,
  });
  return true;
}

const actorName = (a: Actor) => (a.keyId ? `key ${a.keyName}` : a.keyName);
