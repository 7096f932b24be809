import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { ServiceContext } from "../context";
import { ipAllowed } from "./ip-allow";
import type { LoginGuard } from "./login-guard";

/** Who a hosted SFTP session acts for: one hosted connection and its file space. */
export interface HostedAccount {
  workspaceId: string;
  connectionId: string;
  username: string;
}

/**
 * One authentication request as the SSH layer received it, without SSH
 * types. A public key arrives twice: first unsigned (the client asks whether
 * the key would do), then signed; `verifySignature` checks the signature
 * against the stored key line (the transport knows the key formats).
 */
export type LoginCredential =
  | { method: "none" }
  | { method: "password"; password: string }
  | { method: "publickey"; keyBlob: Uint8Array; signed: false }
  | { method: "publickey"; keyBlob: Uint8Array; signed: true; verifySignature: (authorizedKeyLine: string) => boolean }
  | { method: "other"; name: string };

export interface LoginAttempt {
  username: string;
  remoteAddress: string;
  credential: LoginCredential;
}

export type LoginReason =
  | "locked_out"
  | "unknown_user"
  | "ip_not_allowed"
  | "bad_password"
  | "bad_key"
  | "bad_signature"
  | "method_not_allowed"
  | "no_credentials";

export type LoginOutcome =
  | { ok: true; account: HostedAccount }
  /** An unsigned public key that would be accepted: the client should now sign with it. */
  | { ok: "key_acceptable" }
  /** `delayMs`: wait this long before answering (slows guessing). */
  | { ok: false; reason: LoginReason; delayMs: number };

const DUMMY = randomBytes(32);

/**
 * Checks one login on the hosted SFTP server, in this order: an address
 * refused after too many failures; the account (a hosted SFTP connection
 * with this `sftpUsername`); its `ipWhitelist`; then the password (compared
 * in constant time) or the public key (`awsPublicKey`). Every attempt with a
 * credential is logged as `sftp.login` with its outcome and never with the
 * secret; a `none` probe (how clients discover methods) at debug level.
 * Failures count towards the address's lockout, except `none` and unsigned
 * key probes, which prove nothing and are how clients try their keys.
 */
export async function authenticateHostedLogin(ctx: ServiceContext, guard: LoginGuard, attempt: LoginAttempt): Promise<LoginOutcome> {
  const { username, remoteAddress, credential } = attempt;
  const method = credential.method === "other" ? credential.name : credential.method;
  const logFields = { event: "sftp.login", username: printable(username), remoteAddress, method };
  const probe = credential.method === "none" || (credential.method === "publickey" && !credential.signed);

  const refused = guard.check(remoteAddress);
  if (refused.locked) {
    ctx.log.warn({ ...logFields, outcome: "rejected", reason: "locked_out", retryAfterSeconds: Math.ceil(refused.retryAfterMs / 1000) }, "sftp login refused");
    return { ok: false, reason: "locked_out", delayMs: 0 };
  }

  const fail = (reason: LoginReason, extra: Record<string, unknown> = {}): LoginOutcome => {
    if (probe) {
      ctx.log.debug({ ...logFields, ...extra, outcome: "rejected", reason }, "sftp login probe");
      return { ok: false, reason, delayMs: 0 };
    }
    const { failures, delayMs, lockedNow } = guard.fail(remoteAddress);
    ctx.log.warn({ ...logFields, ...extra, outcome: "rejected", reason, failures, lockedOut: lockedNow || undefined }, "sftp login rejected");
    return { ok: false, reason, delayMs };
  };

  const account = await findHostedAccount(ctx, username);
  if (!account) {
    // The same work as a real comparison, so a miss does not answer faster than a wrong password.
    if (credential.method === "password") safeEqual(credential.password, DUMMY.toString("base64"));
    return fail("unknown_user");
  }
  const ids = { workspaceId: account.workspaceId, connectionId: account.id };
  if (!ipAllowed(account.ipWhitelist, remoteAddress)) return fail("ip_not_allowed", ids);

  switch (credential.method) {
    case "password": {
      if (!account.passwordEnc) return fail("method_not_allowed", ids);
      if (!safeEqual(credential.password, ctx.secrets.open(account.passwordEnc))) return fail("bad_password", ids);
      break;
    }
    case "publickey": {
      const line = account.publicKey;
      if (!line) return fail("method_not_allowed", ids);
      const stored = keyBlob(line);
      if (!stored || stored.length !== credential.keyBlob.length || !timingSafeEqual(stored, credential.keyBlob)) return fail("bad_key", ids);
      if (!credential.signed) {
        ctx.log.debug({ ...logFields, ...ids, outcome: "key_acceptable" }, "sftp login probe");
        return { ok: "key_acceptable" };
      }
      if (!credential.verifySignature(line)) return fail("bad_signature", ids);
      break;
    }
    case "none":
      return fail("no_credentials", ids);
    default:
      return fail("method_not_allowed", ids);
  }

  guard.succeed(remoteAddress);
  ctx.log.info({ ...logFields, ...ids, outcome: "accepted" }, "sftp login accepted");
  return { ok: true, account: { workspaceId: account.workspaceId, connectionId: account.id, username: account.username } };
}

interface AccountRow {
  id: string;
  workspaceId: string;
  username: string;
  passwordEnc: string | null;
  publicKey: string | null;
  ipWhitelist: string[];
}

/** The hosted SFTP connection with this login, if any (logins are unique across the service). */
export async function findHostedAccount(ctx: ServiceContext, username: string): Promise<AccountRow | null> {
  if (!/^[a-z0-9][a-z0-9._-]{2,63}$/.test(username)) return null;
  const c = ctx.db.t.connections;
  const [row] = await ctx.db.read
    .select({
      id: c.id,
      workspaceId: c.workspaceId,
      username: c.sftpUsername,
      passwordEnc: c.sftpPasswordEnc,
      publicKey: c.awsPublicKey,
      ipWhitelist: c.ipWhitelist,
    })
    .from(c)
    .where(and(eq(c.sftpUsername, username), eq(c.useHostedSftp, true), eq(c.type, "SFTP")))
    .limit(1);
  return row ? { ...row, username: row.username ?? username, ipWhitelist: row.ipWhitelist ?? [] } : null;
}

/** Equal-length digests compared in constant time: neither the length nor the first difference shows in the timing. */
function safeEqual(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

/** The key blob of an OpenSSH public key line (`ssh-ed25519 AAAA... comment`). */
function keyBlob(line: string): Buffer | null {
  const b64 = line.trim().split(/\s+/)[1];
  if (!b64) return null;
  const blob = Buffer.from(b64, "base64");
  return blob.length > 0 ? blob : null;
}

/** Usernames are client input: kept short and printable in logs. */
function printable(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 100);
}
