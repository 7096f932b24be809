import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { timestamps } from "./columns";
import { sftpServers } from "./sftp-servers";
import { workspaces } from "./workspaces";

export const connections = sqliteTable(
  "connections",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    type: text("type").notNull(),
    useHostedSftp: integer("use_hosted_sftp", { mode: "boolean" }).notNull(),
    sftpUsername: text("sftp_username"),
    /** Secrets are AES-256-GCM ciphertexts (src/adapters/crypto/secret-box.ts). */
    sftpPasswordEnc: text("sftp_password_enc"),
    sftpPrivateKeyEnc: text("sftp_private_key_enc"),
    sftpPassphraseEnc: text("sftp_passphrase_enc"),
    awsUserName: text("aws_user_name"),
    awsPublicKey: text("aws_public_key"),
    awsPasswordEnc: text("aws_password_enc"),
    pgpPrivateKeyEnc: text("pgp_private_key_enc"),
    pgpPassphraseEnc: text("pgp_passphrase_enc"),
    pgpPartnerPublicKey: text("pgp_partner_public_key"),
    ipWhitelist: text("ip_whitelist", { mode: "json" }).$type<string[]>().notNull(),
    sftpServerId: text("sftp_server_id").references(() => sftpServers.id, { onDelete: "restrict" }),
    emailInboundAddress: text("email_inbound_address").unique(),
    emailAllowedFormats: text("email_allowed_formats", { mode: "json" }).$type<string[]>(),
    emailAllowedSenders: text("email_allowed_senders", { mode: "json" }).$type<string[]>(),
    emailSubjectFilter: text("email_subject_filter"),
    ...timestamps,
  },
  (t) => [
    uniqueIndex("connections_workspace_name_uq").on(t.workspaceId, sql`lower(${t.name})`),
    // The hosted SFTP server is shared by every workspace, so its logins are unique service-wide.
    uniqueIndex("connections_hosted_username_uq").on(t.sftpUsername).where(sql`${t.useHostedSftp} = 1`),
    index("connections_server_idx").on(t.sftpServerId),
  ],
);
