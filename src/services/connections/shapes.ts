import ipaddr from "ipaddr.js";
import { z } from "zod";
import { withoutReadOnly } from "../../domain/validation";
import { Id, Name, PageQuery } from "../shared/shapes";

export const CONNECTION_TYPES = ["SFTP", "EMAIL"] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];
const ConnectionTypeShape = z
  .enum(CONNECTION_TYPES, { error: `must be one of ${CONNECTION_TYPES.join(", ")}` })
  .meta({ id: "ConnectionType" });

/** Attachment formats an EMAIL connection can accept (the formats the pipeline engine parses). */
export const FILE_FORMATS = ["csv", "tsv", "txt", "json", "ndjson", "xml", "zip", "pgp"] as const;

/** The service's own SFTP server, which every hosted connection is bound to. */
export const HOSTED_SERVER_ID = "srv_hosted";

/** Fields that carry secrets: accepted on create/update, stored encrypted, never returned in 2026-05-25. */
export const SECRET_FIELDS = ["sftpPassword", "sftpPrivateKey", "sftpPassphrase", "awsPassword", "pgpPrivateKey", "pgpPassphrase"] as const;
/** The credentials version 2024-09-01 returned in clear; the OpenPGP ones came later and are never returned. */
export const LEGACY_SECRET_FIELDS = ["sftpPassword", "sftpPrivateKey", "sftpPassphrase", "awsPassword"] as const;
export type SecretField = (typeof SECRET_FIELDS)[number];

const secret = (max: number) =>
  z.string().min(1, "must not be empty; send null to remove it").max(max, `must be at most ${max} characters`).nullable().optional();

const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** A path inside the server, written with a leading slash; `..` is refused so a folder cannot escape its root. */
const ServerPath = z
  .string()
  .max(1024, "must be at most 1024 characters")
  .transform((p) => `/${p.split("/").filter((s) => s && s !== ".").join("/")}`)
  .refine((p) => !p.split("/").includes(".."), "must not contain '..'");

export const SftpServerInput = z
  .strictObject({
    host: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .refine((h) => HOST.test(h) || ipaddr.isValid(h), "must be a host name or IP address, without scheme or port"),
    port: z.number().int("must be a whole number").min(1).max(65535, "must be between 1 and 65535").default(22),
    rootDirectory: ServerPath.default("/"),
    inboundFolder: ServerPath.default("/inbound"),
    outboundFolder: ServerPath.default("/outbound"),
    processedFolder: ServerPath.nullable()
      .default(null)
      .meta({ description: "Where files taken from inboundFolder are moved once their runs started; null (the default) leaves them in place." }),
  })
  .refine((s) => s.processedFolder == null || s.processedFolder !== s.inboundFolder, {
    message: "must differ from inboundFolder",
    path: ["processedFolder"],
  })
  .meta({ id: "SftpServerInput", description: "A customer's own SFTP endpoint. Folders are paths inside rootDirectory." });

const Format = z.preprocess(
  (v) => (typeof v === "string" ? v.trim().toLowerCase().replace(/^\./, "") : v),
  z.enum(FILE_FORMATS, { error: (i) => `unknown format '${typeof i.input === "string" ? i.input : JSON.stringify(i.input)}'; allowed: ${FILE_FORMATS.join(", ")}` }),
);

/** `name@example.com`, `@example.com` or `*@example.com`. */
const Sender = z
  .string()
  .trim()
  .toLowerCase()
  .max(320)
  .refine((s) => /^(\*?@|[^@\s]+@)[a-z0-9.-]+\.[a-z]{2,}$/.test(s), "must be an e-mail address or @domain");

const IpOrCidr = z
  .string()
  .trim()
  .refine((s) => ipaddr.isValid(s) || ipaddr.isValidCIDR(s), "must be an IP address or CIDR range");

const PUBLIC_KEY = /^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$/;

const HostedUsernameRule = /^[a-z0-9][a-z0-9._-]{2,63}$/;
export function isHostedUsername(s: string): boolean {
  return HostedUsernameRule.test(s);
}

const fields = {
  type: ConnectionTypeShape.optional(),
  useHostedSFTP: z.boolean().optional(),
  sftpUsername: z.string().trim().min(1, "must not be empty").max(200).nullable().optional(),
  sftpPassword: secret(1024),
  sftpPrivateKey: secret(16384).refine(
    (k) => k == null || /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(k),
    "must be a PEM or OpenSSH private key (-----BEGIN ... PRIVATE KEY-----)",
  ),
  sftpPassphrase: secret(1024),
  awsUserName: z.string().trim().min(1, "must not be empty; send null to remove it").max(200).nullable().optional(),
  awsPublicKey: z
    .string()
    .trim()
    .max(16384)
    .refine((k) => PUBLIC_KEY.test(k), "must be an OpenSSH public key line (ssh-ed25519 AAAA...)")
    .nullable()
    .optional(),
  awsPassword: secret(1024),
  pgpPrivateKey: secret(65536).refine(
    (k) => k == null || k.includes("-----BEGIN PGP PRIVATE KEY BLOCK-----"),
    "must be an armored OpenPGP private key (-----BEGIN PGP PRIVATE KEY BLOCK-----)",
  ),
  pgpPassphrase: secret(1024),
  pgpPartnerPublicKey: z
    .string()
    .trim()
    .max(65536)
    .refine((k) => k.includes("-----BEGIN PGP PUBLIC KEY BLOCK-----"), "must be an armored OpenPGP public key (-----BEGIN PGP PUBLIC KEY BLOCK-----)")
    .nullable()
    .optional()
    .meta({ description: "The partner's public key: inbound OpenPGP files must be signed by it, and outbound files can be encrypted to it." }),
  ipWhitelist: z.array(IpOrCidr).max(100, "must have at most 100 entries").nullable().optional(),
  sftpServerDataId: Id.nullable().optional(),
  sftpServer: SftpServerInput.optional(),
  emailAllowedFormats: z.array(Format).max(FILE_FORMATS.length).optional(),
  emailAllowedSenders: z.array(Sender).max(100, "must have at most 100 entries").nullable().optional(),
  emailSubjectFilter: z.string().max(500).nullable().optional(),
};

export const CreateConnectionInput = z.strictObject({ name: Name, ...fields }).meta({ id: "CreateConnectionInput" });
export type CreateConnectionInput = z.input<typeof CreateConnectionInput>;

/** Members left out keep their value; `null` clears an optional member. `name` is required. */
export const UpdateConnectionInput = z.strictObject({ name: Name, ...fields }).meta({ id: "UpdateConnectionInput" });

/** Response members a client may send back unchanged; ignored on input. */
export const CONNECTION_READ_ONLY = [
  "id",
  "workspaceId",
  "createdAt",
  "updatedAt",
  "emailInbox",
  "credentialsSet",
  "sftpServer.id",
  "sftpServer.hosted",
] as const;

/** A connection read back includes the hosted server's description; it is not a server to bind to. */
export function connectionInput(raw: unknown): unknown {
  const server = (raw as { sftpServer?: { hosted?: unknown } } | null)?.sftpServer;
  const cleaned = server?.hosted === true ? withoutReadOnly(raw, ["sftpServer"]) : raw;
  return withoutReadOnly(cleaned, CONNECTION_READ_ONLY);
}
export type UpdateConnectionInput = z.input<typeof UpdateConnectionInput>;

export const ListConnectionsQuery = PageQuery.extend({
  type: ConnectionTypeShape.optional(),
  name: z.string().max(200).optional(),
});
export type ListConnectionsQuery = z.output<typeof ListConnectionsQuery>;

const SftpServer = z
  .object({
    id: z.string(),
    hosted: z.boolean(),
    host: z.string(),
    port: z.number().int(),
    rootDirectory: z.string(),
    inboundFolder: z.string(),
    outboundFolder: z.string(),
    processedFolder: z.string().optional(),
  })
  .meta({ id: "SftpServer" });

export const Connection = z
  .object({
    id: z.string(),
    name: z.string(),
    workspaceId: z.string(),
    type: ConnectionTypeShape,
    useHostedSFTP: z.boolean(),
    sftpUsername: z.string().optional(),
    awsUserName: z.string().optional(),
    awsPublicKey: z.string().optional(),
    pgpPartnerPublicKey: z.string().optional(),
    ipWhitelist: z.array(z.string()),
    sftpServerDataId: z.string().optional(),
    sftpServer: SftpServer.optional(),
    emailInbox: z.object({ inboundAddress: z.string() }).meta({ id: "EmailInbox" }).optional(),
    emailAllowedFormats: z.array(z.string()).optional(),
    emailAllowedSenders: z.array(z.string()).optional(),
    emailSubjectFilter: z.string().optional(),
    credentialsSet: z
      .array(z.enum(SECRET_FIELDS).meta({ id: "CredentialName" }))
      .meta({ description: "Which write-only credentials are stored (their values are never returned in 2026-05-25)." }),
    sftpPassword: z.string().optional().meta({ deprecated: true, description: "Only in version 2024-09-01, which returned stored credentials." }),
    sftpPrivateKey: z.string().optional().meta({ deprecated: true, description: "Only in version 2024-09-01, which returned stored credentials." }),
    sftpPassphrase: z.string().optional().meta({ deprecated: true, description: "Only in version 2024-09-01, which returned stored credentials." }),
    awsPassword: z.string().optional().meta({ deprecated: true, description: "Only in version 2024-09-01, which returned stored credentials." }),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "Connection" });
export type Connection = z.output<typeof Connection>;

export const ConnectionTestResult = z
  .object({
    ok: z.boolean(),
    connectionId: z.string(),
    checks: z.array(
      z
        .object({
          name: z.string(),
          status: z.enum(["passed", "failed", "skipped"]).meta({ id: "CheckStatus" }),
          message: z.string(),
          durationMs: z.number().optional(),
        })
        .meta({ id: "ConnectionCheck" }),
    ),
  })
  .meta({ id: "ConnectionTestResult" });
export type ConnectionTestResult = z.output<typeof ConnectionTestResult>;
