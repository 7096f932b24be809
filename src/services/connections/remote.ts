import { posix } from "node:path";
import type { LoginResult, SftpLogin } from "../../adapters/sftp/port";
import type { ServiceContext } from "../context";
import type { ConnectionRecord, ServerRow } from "./record";

/**
 * A self-hosted connection's server as the client sees it: folders are paths
 * inside rootDirectory (connections/shapes.ts), so `/inbound` under root
 * `/data` is `/data/inbound` on the server.
 */
export interface RemoteFolders {
  inbound: string;
  outbound: string;
  processed: string | null;
}

export function remoteFolders(server: Pick<ServerRow, "rootDirectory" | "inboundFolder" | "outboundFolder" | "processedFolder">): RemoteFolders {
  const inside = (folder: string) => posix.join(server.rootDirectory || "/", folder);
  return {
    inbound: inside(server.inboundFolder),
    outbound: inside(server.outboundFolder),
    processed: server.processedFolder ? inside(server.processedFolder) : null,
  };
}

/** The login of a self-hosted connection: its username with its password and/or private key (+ passphrase), decrypted. */
export function customerLogin(ctx: ServiceContext, rec: ConnectionRecord, opts: Pick<SftpLogin, "timeoutMs" | "operationTimeoutMs"> = {}): SftpLogin | null {
  const { row, server } = rec;
  if (!server || row.useHostedSftp || row.type !== "SFTP") return null;
  const open = (v: string | null) => (v == null ? null : ctx.secrets.open(v));
  return {
    host: server.host,
    port: server.port,
    credentials: {
      username: row.sftpUsername ?? "",
      password: open(row.sftpPasswordEnc),
      privateKey: open(row.sftpPrivateKeyEnc),
      passphrase: open(row.sftpPassphraseEnc),
    },
    ...opts,
  };
}

/** A failed login in one sentence, without secrets. */
export function loginFailure(login: SftpLogin, r: Extract<LoginResult, { ok: false }>): string {
  const where = `${login.host}:${login.port}`;
  switch (r.stage) {
    case "connect":
      return `cannot connect to ${where}: ${r.reason}`;
    case "handshake":
      return `no SSH session with ${where}: ${r.reason}`;
    case "auth":
      return `login as '${login.credentials.username}' on ${where} failed: ${r.reason}`;
    case "sftp":
      return `logged in to ${where}, but no SFTP: ${r.reason}`;
  }
}
