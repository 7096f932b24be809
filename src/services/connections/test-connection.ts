import type { SftpSession } from "../../adapters/sftp/port";
import { probeBanner } from "../../adapters/sftp/tcp-probe";
import type { CallOptions, ServiceContext } from "../context";
import { customerLogin, loginFailure, remoteFolders } from "./remote";
import { loadConnection } from "./record";
import type { ConnectionTestResult } from "./shapes";

type Check = ConnectionTestResult["checks"][number];

/** Each network step of a test gives up after this long, so test-connection answers within seconds. */
const PROBE_TIMEOUT_MS = 5000;
const LOGIN_TIMEOUT_MS = 10_000;
const OPERATION_TIMEOUT_MS = 10_000;

/**
 * Reports exactly what was checked, one check per step, in order; a step
 * that cannot run because an earlier one failed is `skipped`, never passed.
 *
 * - Self-hosted SFTP: TCP reachability and the SSH identification line
 *   (tcp_connect, ssh_handshake), whether credentials are set, a real login
 *   (key exchange and authentication), then the folders: inbound listable
 *   (and writable when a processedFolder is set, since taking a file moves
 *   it out), outbound and processed folders writable (created when
 *   missing, as deliveries and the poller would; a probe file with a
 *   temporary name is written and removed).
 * - Hosted SFTP: the account (login name, credentials) and whether the
 *   service's own SFTP server answers at the address partners use
 *   (SFTP_HOST or PUBLIC_URL's host, SFTP_PORT).
 * - EMAIL: the inbound address and formats, and whether the service's SMTP
 *   receiver greets at PUBLIC_URL's host on SMTP_PORT.
 */
export async function testConnection(ctx: ServiceContext, opts: CallOptions & { id: string }): Promise<ConnectionTestResult> {
  const rec = await loadConnection(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
  const { row, server } = rec;
  const checks: Check[] = [];
  if (row.type === "EMAIL") {
    checks.push({ name: "inbound_address", status: "passed", message: `mail to ${row.emailInboundAddress} is routed to this connection` });
    checks.push({ name: "allowed_formats", status: "passed", message: `accepts ${(row.emailAllowedFormats ?? []).join(", ")} attachments` });
    const where = `${ctx.settings.smtpHost}:${ctx.settings.smtpPort}`;
    const smtp = await probeBanner({ host: ctx.settings.smtpHost, port: ctx.settings.smtpPort }, { protocol: "SMTP", timeoutMs: PROBE_TIMEOUT_MS });
    checks.push(
      smtp.ok
        ? { name: "mail_receiver", status: "passed", message: `the service's SMTP receiver answers at ${where}: '${smtp.banner}'`, durationMs: smtp.durationMs }
        : { name: "mail_receiver", status: "failed", message: `the service's SMTP receiver does not answer at ${where}: ${smtp.reason}`, durationMs: smtp.durationMs },
    );
  } else if (row.useHostedSftp) {
    const where = `${ctx.settings.sftpHost}:${ctx.settings.sftpPort}`;
    checks.push({ name: "hosted_account", status: "passed", message: `login name '${row.sftpUsername}' on ${where}` });
    checks.push(
      has(row.sftpPasswordEnc) || has(row.awsPublicKey)
        ? { name: "credentials", status: "passed", message: "a password or public key is set for partner logins" }
        : { name: "credentials", status: "failed", message: "set sftpPassword or awsPublicKey so that your partner can log in" },
    );
    const probe = await ctx.sftp.probe({ host: ctx.settings.sftpHost, port: ctx.settings.sftpPort }, { timeoutMs: PROBE_TIMEOUT_MS });
    checks.push(
      probe.ok
        ? { name: "hosted_server", status: "passed", message: `the service's SFTP server answers at ${where}: '${probe.banner}'`, durationMs: probe.durationMs }
        : { name: "hosted_server", status: "failed", message: `the service's SFTP server does not answer at ${where}: ${probe.reason}`, durationMs: probe.durationMs },
    );
  } else if (server) {
    checks.push(...(await testCustomerServer(ctx, rec)));
  }
  return { ok: checks.every((c) => c.status !== "failed"), connectionId: row.id, checks };
}

async function testCustomerServer(ctx: ServiceContext, rec: Parameters<typeof customerLogin>[1]): Promise<Check[]> {
  const { row, server } = rec;
  if (!server) return [];
  const checks: Check[] = [];
  const skip = (name: string, why: string) => checks.push({ name, status: "skipped", message: `not checked: ${why}` });
  const folders = remoteFolders(server);
  const rest = (why: string) => {
    skip("inbound_folder", why);
    skip("outbound_folder", why);
    if (folders.processed) skip("processed_folder", why);
  };
  const where = `${server.host}:${server.port}`;

  const probe = await ctx.sftp.probe({ host: server.host, port: server.port }, { timeoutMs: PROBE_TIMEOUT_MS });
  if (probe.ok) {
    checks.push({ name: "tcp_connect", status: "passed", message: `${where} accepted a connection`, durationMs: probe.durationMs });
    checks.push({ name: "ssh_handshake", status: "passed", message: `server identifies as '${probe.banner}'`, durationMs: probe.durationMs });
  } else if (probe.stage === "connect") {
    checks.push({ name: "tcp_connect", status: "failed", message: `${where}: ${probe.reason}`, durationMs: probe.durationMs });
    skip("ssh_handshake", "no connection");
  } else {
    checks.push({ name: "tcp_connect", status: "passed", message: `${where} accepted a connection` });
    checks.push({ name: "ssh_handshake", status: "failed", message: probe.reason, durationMs: probe.durationMs });
  }
  const creds = has(row.sftpUsername) && (has(row.sftpPasswordEnc) || has(row.sftpPrivateKeyEnc));
  checks.push(
    creds
      ? { name: "credentials", status: "passed", message: `username '${row.sftpUsername}' with ${row.sftpPrivateKeyEnc ? "a private key" : "a password"}${row.sftpPrivateKeyEnc && row.sftpPasswordEnc ? " and a password" : ""}` }
      : { name: "credentials", status: "failed", message: "set sftpUsername and sftpPassword or sftpPrivateKey" },
  );
  if (!probe.ok || !creds) {
    skip("login", !probe.ok ? "the server is not reachable" : "no credentials");
    rest("not logged in");
    return checks;
  }

  const login = customerLogin(ctx, rec, { timeoutMs: LOGIN_TIMEOUT_MS, operationTimeoutMs: OPERATION_TIMEOUT_MS });
  if (!login) return checks;
  const session = await ctx.sftp.login(login);
  if (!session.ok) {
    checks.push({ name: "login", status: "failed", message: loginFailure(login, session), durationMs: session.durationMs });
    rest("not logged in");
    return checks;
  }
  checks.push({
    name: "login",
    status: "passed",
    message: `logged in as '${login.credentials.username}' and opened SFTP (host key ${session.hostKey})`,
    durationMs: session.durationMs,
  });
  try {
    checks.push(...(await testFolders(session.session, folders)));
  } finally {
    await session.session.close();
  }
  return checks;
}

async function testFolders(s: SftpSession, folders: ReturnType<typeof remoteFolders>): Promise<Check[]> {
  const checks: Check[] = [];
  const timed = async <T>(fn: () => Promise<T>) => {
    const t0 = performance.now();
    const value = await fn();
    return { value, durationMs: Math.round(performance.now() - t0) };
  };

  // Taking a file with a processed folder moves it out of the inbound folder: that needs write access there too.
  const inbound = await timed(() => s.checkFolder(folders.inbound, { write: folders.processed != null }));
  const { readable, writable } = inbound.value;
  if (!readable.ok) {
    checks.push({ name: "inbound_folder", status: "failed", message: `${folders.inbound} cannot be listed: ${readable.reason}`, durationMs: inbound.durationMs });
  } else if (writable && !writable.ok) {
    checks.push({
      name: "inbound_folder",
      status: "failed",
      message: `${folders.inbound} is readable (${readable.value.entries} entries) but not writable, so taken files cannot be moved to ${folders.processed}: ${writable.reason}`,
      durationMs: inbound.durationMs,
    });
  } else {
    checks.push({
      name: "inbound_folder",
      status: "passed",
      message: `${folders.inbound} is readable (${readable.value.entries} entries)${writable ? " and writable" : ""}`,
      durationMs: inbound.durationMs,
    });
  }

  checks.push(await writableFolder(s, "outbound_folder", folders.outbound, "deliveries"));
  if (folders.processed) checks.push(await writableFolder(s, "processed_folder", folders.processed, "the poller's moves"));
  return checks;
}

/** A folder the service writes to: created when missing (as deliveries and the poller would), then a probe file is written and removed. */
async function writableFolder(s: SftpSession, name: string, folder: string, user: string): Promise<Check> {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  const before = await s.stat(folder);
  let created = false;
  if (!before.ok && before.code === "not_found") {
    const made = await s.mkdirp(folder);
    if (!made.ok) return { name, status: "failed", message: `${folder} does not exist and cannot be created for ${user}: ${made.reason}`, durationMs: ms() };
    created = true;
  } else if (!before.ok) {
    return { name, status: "failed", message: `${folder}: ${before.reason}`, durationMs: ms() };
  } else if (before.value.type !== "directory") {
    return { name, status: "failed", message: `${folder} is not a folder`, durationMs: ms() };
  }
  const { writable } = await s.checkFolder(folder, { write: true });
  if (!writable || !writable.ok) {
    return { name, status: "failed", message: `${folder} is not writable: ${writable && !writable.ok ? writable.reason : "unknown"}`, durationMs: ms() };
  }
  return {
    name,
    status: "passed",
    message: `${folder} ${created ? "did not exist and was created; it " : ""}is writable (a probe file was written and removed)`,
    durationMs: ms(),
  };
}

const has = (v: unknown) => v != null;
