import { posix } from "node:path";
import type { UploadBody } from "../../../../adapters/sftp/port";
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
  openBody: () => Promise<RunBody>;
}

/**
 * Writes an outbound file to a self-hosted connection's own SFTP server:
 * the outbound folder (created when missing) receives it under a temporary
 * name (`.<name>.<random>.part`), which is renamed to `filename` once the
 * whole file is written and closed, so the customer never picks up half a
 * file. A file of the same name already there is replaced (atomically with
 * OpenSSH's posix-rename), as a hosted connection's outbound file is.
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
    const uploaded = await session.session.upload(remotePath, asUploadBody(body), { overwrite: true });
    if (!uploaded.ok) throw new Error(`writing ${remotePath}: ${uploaded.reason}`);
    ctx.log.info({ connectionId: d.connectionId, host: login.host, remotePath, size: uploaded.value.size }, "delivered to customer SFTP");
    return { remotePath };
  } finally {
    await session.session.close();
  }
}

function asUploadBody(body: RunBody): UploadBody {
  // A web ReadableStream is async-iterable under Bun.
  return body as UploadBody;
}
