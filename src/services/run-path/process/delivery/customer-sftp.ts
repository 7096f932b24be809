import { createHash } from "node:crypto";
import { posix } from "node:path";
import type { SftpSession, UploadBody } from "../../../../adapters/sftp/port";
import { parseTemporaryName } from "../../../../adapters/sftp/temp-names";
import { AppError } from "../../../../domain/errors";
import { loadConnection } from "../../../connections/record";
import type { ServiceContext } from "../../../context";
import type { RunBody } from "../../ingest/start-run";
import { customerLogin, loginFailure, remoteFolders } from "../../../connections/remote";

export interface CustomerDelivery {
  workspaceId: string;
  connectionId: string;
  /** The exact name to deliver under, inside the server's outbound folder. */
  filename: string;
  /** The same for every attempt of one delivery (the run's id): names its temporary files. */
  deliveryId: string;
  openBody: () => Promise<RunBody>;
}

/** Our temporary files of other deliveries are removed once older than this, by the server's clock: no live write is that old. */
export const STALE_TEMPORARY_SECONDS = 3600;

/**
 * Writes an outbound file to a self-hosted connection's own SFTP server:
 * the outbound folder (created when missing) receives it under a temporary
 * name (`.fps.<name>.<key>.<random>.part`, key from `deliveryId`), which is
 * renamed to `filename` once the whole file is written and closed, so the
 * customer never picks up half a file. A file of the same name already there
 * is replaced (atomically with OpenSSH's posix-rename), as a hosted
 * connection's outbound file is. Then what interrupted deliveries left in
 * the folder is removed (removeLeftovers).
 *
 * Throws an Error naming what failed (login, folder, write, rename); the
 * caller retries (docs/decisions/customer-sftp.md). A connection that is
 * not self-hosted SFTP is an AppError("conflict").
 */
export async function deliverToCustomerSftp(ctx: ServiceContext, d: CustomerDelivery): Promise<{ remotePath: string }> {
  if (!d.filename || d.filename.includes("/") || d.filename === "." || d.filename === "..") {
    throw new AppError("invalid_input", `filename: '${d.filename}' is not a plain file name`);
  }
  const rec = await loadConnection(ctx, { workspaceId: d.workspaceId, id: d.connectionId });
  const login = customerLogin(ctx, rec);
  if (!rec.server || !login) {
    throw new AppError("conflict", `connection '${d.connectionId}' is not a self-hosted SFTP connection`);
  }
  const folder = remoteFolders(rec.server).outbound;
  const remotePath = posix.join(folder, d.filename);
  const session = await ctx.sftp.login(login);
  if (!session.ok) throw new Error(loginFailure(login, session));
  try {
    const made = await session.session.mkdirp(folder);
    if (!made.ok) throw new Error(`outbound folder ${folder}: ${made.reason}`);
    const body = await d.openBody();
    const key = deliveryKey(d.deliveryId, d.filename);
    const uploaded = await session.session.upload(remotePath, asUploadBody(body), { overwrite: true, tempKey: key });
    if (!uploaded.ok) throw new Error(`writing ${remotePath}: ${uploaded.reason}`);
    ctx.log.info({ connectionId: d.connectionId, host: login.host, remotePath, size: uploaded.value.size }, "delivered to customer SFTP");
    const { removed, failed } = await removeLeftovers(session.session, folder, remotePath, key);
    if (removed.length > 0 || failed) {
      ctx.log.info({ connectionId: d.connectionId, host: login.host, folder, removed, failed }, "removed temporary files of interrupted deliveries");
    }
    return { remotePath };
  } finally {
    await session.session.close();
  }
}

/** 8 hex digits naming one delivery (a run's file) in its temporary names. */
export function deliveryKey(deliveryId: string, filename: string): string {
  return createHash("sha256").update(`${deliveryId}\n${filename}`).digest("hex").slice(0, 8);
}

/**
 * Removes, after a delivery to `folder` succeeded, the temporary files that
 * interrupted deliveries left there (a process killed while writing cannot
 * remove its own). Only names of ours are touched (parseTemporaryName):
 * - those of this same delivery, whatever their age: an earlier attempt
 *   that is dead (this attempt runs because it was given up). Were it still
 *   writing after all, removing its file only makes its rename fail; nobody
 *   sees half a file.
 * - those of other deliveries once older than STALE_TEMPORARY_SECONDS,
 *   measured against the delivered file's modification time, the server's
 *   own clock, so a skewed clock cannot make a live write look old. A live
 *   write touches its file at least every request timeout (30 s).
 * Best effort: a listing or a removal that fails is reported, not thrown;
 * the next delivery tries again.
 */
export async function removeLeftovers(session: SftpSession, folder: string, delivered: string, key: string): Promise<{ removed: string[]; failed?: string }> {
  const removed: string[] = [];
  let failed: string | undefined;
  const now = await session.stat(delivered);
  const listed = await session.list(folder);
  if (!listed.ok) return { removed, failed: listed.reason };
  for (const e of listed.value) {
    const ours = e.type === "file" ? parseTemporaryName(e.name) : null;
    if (!ours) continue;
    const stale = ours.key === key || (now.ok && e.mtime < now.value.mtime - STALE_TEMPORARY_SECONDS);
    if (!stale) continue;
    const r = await session.remove(e.path);
    if (r.ok) removed.push(e.name);
    else failed = r.reason;
  }
  return { removed, failed };
}

function asUploadBody(body: RunBody): UploadBody {
  // A web ReadableStream is async-iterable under Bun.
  return body as UploadBody;
}
