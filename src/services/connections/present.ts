import { type ApiVersion, LATEST_VERSION, VERSION_RULES } from "../../domain/versions";
import type { ServiceContext } from "../context";
import type { ConnectionRecord } from "./record";
import { SECRET_COLUMNS } from "./save";
import { type Connection, HOSTED_SERVER_ID, LEGACY_SECRET_FIELDS, SECRET_FIELDS } from "./shapes";

/**
 * The wire shape of a connection for an API version. Version 2024-09-01
 * returned stored credentials in clear; 2026-05-25 never does and says only
 * which ones are set.
 */
export function presentConnection(ctx: ServiceContext, rec: ConnectionRecord, version: ApiVersion = LATEST_VERSION): Connection {
  const r = rec.row;
  const credentialsSet = SECRET_FIELDS.filter((f) => r[SECRET_COLUMNS[f]] != null);
  const out: Connection = {
    id: r.id,
    name: r.name,
    workspaceId: r.workspaceId,
    type: r.type as Connection["type"],
    useHostedSFTP: r.useHostedSftp,
  } as Connection;
  if (r.type === "EMAIL") {
    out.emailInbox = { inboundAddress: r.emailInboundAddress ?? "" };
    out.emailAllowedFormats = r.emailAllowedFormats ?? [];
    if (r.emailAllowedSenders) out.emailAllowedSenders = r.emailAllowedSenders;
    if (r.emailSubjectFilter != null) out.emailSubjectFilter = r.emailSubjectFilter;
  } else {
    if (r.sftpUsername != null) out.sftpUsername = r.sftpUsername;
    if (r.awsUserName != null) out.awsUserName = r.awsUserName;
    if (r.awsPublicKey != null) out.awsPublicKey = r.awsPublicKey;
    if (r.useHostedSftp) {
      out.sftpServerDataId = HOSTED_SERVER_ID;
      out.sftpServer = {
        id: HOSTED_SERVER_ID,
        hosted: true,
        host: ctx.settings.sftpHost,
        port: ctx.settings.sftpPort,
        rootDirectory: "/",
        inboundFolder: "/inbound",
        outboundFolder: "/outbound",
      };
    } else if (rec.server) {
      const s = rec.server;
      out.sftpServerDataId = s.id;
      out.sftpServer = {
        id: s.id,
        hosted: false,
        host: s.host,
        port: s.port,
        rootDirectory: s.rootDirectory,
        inboundFolder: s.inboundFolder,
        outboundFolder: s.outboundFolder,
      };
      if (s.processedFolder != null) out.sftpServer.processedFolder = s.processedFolder;
    }
  }
  if (r.pgpPartnerPublicKey != null) out.pgpPartnerPublicKey = r.pgpPartnerPublicKey;
  out.ipWhitelist = r.ipWhitelist;
  out.credentialsSet = credentialsSet;
  if (VERSION_RULES[version].returnsCredentials) {
    for (const f of LEGACY_SECRET_FIELDS) if (r[SECRET_COLUMNS[f]] != null) out[f] = ctx.secrets.open(r[SECRET_COLUMNS[f]] as string);
  }
  out.createdAt = r.createdAt;
  out.updatedAt = r.updatedAt;
  return out;
}
