import { and, eq, notExists } from "drizzle-orm";
import type { z } from "zod";
import { type Writer, uniqueViolation } from "../../../db/client";
import { AppError } from "../../domain/errors";
import { newId } from "../../domain/ids";
import type { ServiceContext } from "../context";
import { randomSuffix, slugify } from "../shared/slug";
import type { ConnectionRecord, ConnectionRow } from "./record";
import {
  type ConnectionType,
  type CreateConnectionInput,
  HOSTED_SERVER_ID,
  isHostedUsername,
  SECRET_FIELDS,
  type SecretField,
} from "./shapes";

type Fields = z.output<typeof CreateConnectionInput>;

const SFTP_ONLY = [
  "sftpUsername",
  "sftpPassword",
  "sftpPrivateKey",
  "sftpPassphrase",
  "awsUserName",
  "awsPublicKey",
  "awsPassword",
  "sftpServer",
  "sftpServerDataId",
] as const;
const EMAIL_ONLY = ["emailAllowedFormats", "emailAllowedSenders", "emailSubjectFilter"] as const;

const SECRET_COLUMNS: Record<SecretField, keyof ConnectionRow> = {
  sftpPassword: "sftpPasswordEnc",
  sftpPrivateKey: "sftpPrivateKeyEnc",
  sftpPassphrase: "sftpPassphraseEnc",
  awsPassword: "awsPasswordEnc",
  pgpPrivateKey: "pgpPrivateKeyEnc",
  pgpPassphrase: "pgpPassphraseEnc",
};
/** OpenPGP keys apply to every kind of connection (files arrive encrypted by SFTP and by e-mail alike). */
const PGP_SECRETS = ["pgpPrivateKey", "pgpPassphrase"] as const;
export { SECRET_COLUMNS };

const given = (v: unknown) => v !== undefined && v !== null;
const invalid = (field: string, message: string) => new AppError("invalid_input", `${field}: ${message}`);

/**
 * Turns create/update input plus the current state (null on create) into
 * the next row, checking the rules that depend on the connection's kind.
 * Runs inside the caller's transaction; may create or edit the bound
 * self-hosted server record.
 */
export async function nextConnectionRow(
  ctx: ServiceContext,
  w: Writer,
  opts: { workspaceId: string; current: ConnectionRecord | null; input: Fields },
): Promise<ConnectionRow> {
  const { workspaceId, current, input } = opts;
  const cur = current?.row ?? null;
  const now = ctx.clock.now();

  if (cur && input.type && input.type !== cur.type) {
    throw invalid("type", `cannot change from ${cur.type} to ${input.type}; create a new connection instead`);
  }
  const type: ConnectionType = cur?.type === "EMAIL" || (!cur && input.type === "EMAIL") ? "EMAIL" : "SFTP";

  const next: ConnectionRow = {
    id: cur?.id ?? newId("connection"),
    workspaceId,
    name: input.name,
    type,
    useHostedSftp: false,
    sftpUsername: null,
    sftpPasswordEnc: null,
    sftpPrivateKeyEnc: null,
    sftpPassphraseEnc: null,
    awsUserName: null,
    awsPublicKey: null,
    awsPasswordEnc: null,
    pgpPrivateKeyEnc: null,
    pgpPassphraseEnc: null,
    pgpPartnerPublicKey: pick(input.pgpPartnerPublicKey, cur?.pgpPartnerPublicKey ?? null),
    ipWhitelist: [...new Set(pick(input.ipWhitelist, cur?.ipWhitelist ?? null) ?? [])],
    sftpServerId: null,
    emailInboundAddress: null,
    emailAllowedFormats: null,
    emailAllowedSenders: null,
    emailSubjectFilter: null,
    createdAt: cur?.createdAt ?? now,
    updatedAt: now,
  };

  for (const f of PGP_SECRETS) {
    const v = input[f];
    const column = SECRET_COLUMNS[f];
    (next as Record<string, unknown>)[column] = v === undefined ? (cur?.[column] ?? null) : v === null ? null : ctx.secrets.seal(v);
  }

  if (type === "EMAIL") {
    for (const f of SFTP_ONLY) if (given(input[f])) throw invalid(f, "only applies to SFTP connections");
    if (input.useHostedSFTP === true) throw invalid("useHostedSFTP", "only applies to SFTP connections");
    const formats = input.emailAllowedFormats ?? cur?.emailAllowedFormats ?? [];
    if (formats.length === 0) throw invalid("emailAllowedFormats", "is required and must not be empty for EMAIL connections");
    next.emailAllowedFormats = [...new Set(formats)];
    next.emailAllowedSenders = pick(input.emailAllowedSenders, cur?.emailAllowedSenders ?? null);
    if (next.emailAllowedSenders) next.emailAllowedSenders = [...new Set(next.emailAllowedSenders)];
    next.emailSubjectFilter = pick(input.emailSubjectFilter, cur?.emailSubjectFilter ?? null);
    next.emailInboundAddress =
      cur?.emailInboundAddress ?? `${slugify(input.name, 40, "inbox")}-${randomSuffix(6)}@${ctx.settings.emailDomain}`;
    return next;
  }

  for (const f of EMAIL_ONLY) if (given(input[f])) throw invalid(f, "only applies to EMAIL connections");

  // On create the server members imply the kind; on update, moving between
  // the hosted server and the customer's own takes an explicit useHostedSFTP.
  const wantsOwnServer = input.sftpServer !== undefined || (given(input.sftpServerDataId) && input.sftpServerDataId !== HOSTED_SERVER_ID);
  const hosted = input.useHostedSFTP ?? (cur ? cur.useHostedSftp : !wantsOwnServer);
  next.useHostedSftp = hosted;

  for (const f of SECRET_FIELDS) {
    const v = input[f];
    const column = SECRET_COLUMNS[f];
    (next as Record<string, unknown>)[column] = v === undefined ? (cur?.[column] ?? null) : v === null ? null : ctx.secrets.seal(v);
  }
  next.awsUserName = pick(input.awsUserName, cur?.awsUserName ?? null);
  next.awsPublicKey = pick(input.awsPublicKey, cur?.awsPublicKey ?? null);

  if (hosted) {
    if (input.sftpServer !== undefined) {
      throw invalid("sftpServer", "a hosted connection uses the service's own SFTP server; send useHostedSFTP: false to use yours");
    }
    if (given(input.sftpServerDataId) && input.sftpServerDataId !== HOSTED_SERVER_ID) {
      throw invalid("sftpServerDataId", `a hosted connection is bound to '${HOSTED_SERVER_ID}'; send useHostedSFTP: false to use your own server`);
    }
    const keep = cur?.useHostedSftp ? cur.sftpUsername : null;
    const username = input.sftpUsername === undefined ? keep : input.sftpUsername;
    if (username != null && !isHostedUsername(username)) {
      throw invalid(
        "sftpUsername",
        "a hosted SFTP username is 3-64 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit",
      );
    }
    next.sftpUsername = username ?? `${slugify(input.name, 40, "conn")}-${randomSuffix(6)}`;
    return next;
  }

  if (input.sftpServerDataId === HOSTED_SERVER_ID) {
    throw invalid("sftpServerDataId", "this connection uses your own SFTP server; send useHostedSFTP: true to move it to the hosted one");
  }
  next.sftpUsername = pick(input.sftpUsername, cur?.sftpUsername ?? null);
  next.sftpServerId = await bindServer(ctx, w, { workspaceId, current: current, input, now });
  return next;
}

function pick<T>(input: T | null | undefined, current: T | null): T | null {
  return input === undefined ? current : input;
}

async function bindServer(
  ctx: ServiceContext,
  w: Writer,
  opts: { workspaceId: string; current: ConnectionRecord | null; input: Fields; now: Date },
): Promise<string> {
  const s = ctx.db.t.sftpServers;
  const { input, current, workspaceId, now } = opts;
  const currentServer = current && !current.row.useHostedSftp ? current.server : null;

  if (given(input.sftpServerDataId) && input.sftpServerDataId !== currentServer?.id) {
    const id = input.sftpServerDataId as string;
    const [found] = await w.select().from(s).where(and(eq(s.id, id), eq(s.workspaceId, workspaceId)));
    if (!found) throw new AppError("not_found", `sftpServerDataId: SFTP server '${id}' not found`);
    if (input.sftpServer) await w.update(s).set({ ...input.sftpServer, updatedAt: now }).where(eq(s.id, id));
    return id;
  }
  if (input.sftpServer) {
    if (currentServer) {
      // A server record is shared by the connections bound to it; editing it edits it for all of them.
      await w.update(s).set({ ...input.sftpServer, updatedAt: now }).where(eq(s.id, currentServer.id));
      return currentServer.id;
    }
    const id = newId("sftpServer");
    await w.insert(s).values({ id, workspaceId, ...input.sftpServer, createdAt: now, updatedAt: now });
    return id;
  }
  if (currentServer) return currentServer.id;
  throw invalid("sftpServer", "is required for a self-hosted connection (or give sftpServerDataId)");
}

/** Removes a self-hosted server record once no connection is bound to it. */
export async function dropServerIfUnused(ctx: ServiceContext, w: Writer, serverId: string | null): Promise<void> {
  if (!serverId) return;
  const { sftpServers: s, connections: c } = ctx.db.t;
  await w
    .delete(s)
    .where(and(eq(s.id, serverId), notExists(w.select({ one: c.id }).from(c).where(eq(c.sftpServerId, serverId)))));
}

/** Unique-constraint failures of a connection write, in the caller's words. */
export function connectionConflict(e: unknown, row: { name: string; sftpUsername: string | null }): never {
  const constraint = uniqueViolation(e);
  if (constraint?.includes("hosted_username") || constraint?.includes("sftp_username")) {
    throw new AppError("conflict", `sftpUsername: '${row.sftpUsername}' is already taken on the hosted SFTP server`);
  }
  if (constraint) throw new AppError("conflict", `name: a connection named '${row.name}' already exists`);
  throw e;
}
