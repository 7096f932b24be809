import type { CallOptions, ServiceContext } from "../context";
import { loadConnection } from "./record";
import type { ConnectionTestResult } from "./shapes";

type Check = ConnectionTestResult["checks"][number];

/**
 * Reports exactly what was checked. For a customer's server: TCP reachability
 * and the SSH identification line. Logging in is not attempted yet, and the
 * result says so with a `skipped` check rather than claiming success.
 */
export async function testConnection(
  ctx: ServiceContext,
  opts: CallOptions & { id: string },
): Promise<ConnectionTestResult> {
  const { row, server } = await loadConnection(ctx, { workspaceId: opts.actor.workspaceId, id: opts.id });
  const checks: Check[] = [];
  const has = (v: unknown) => v != null;

  if (row.type === "EMAIL") {
    checks.push({ name: "inbound_address", status: "passed", message: `mail to ${row.emailInboundAddress} is routed to this connection` });
    checks.push({ name: "allowed_formats", status: "passed", message: `accepts ${(row.emailAllowedFormats ?? []).join(", ")} attachments` });
    checks.push({ name: "mail_receiver", status: "skipped", message: "not checked: this version does not run the inbound mail receiver yet" });
  } else if (row.useHostedSftp) {
    checks.push({ name: "hosted_account", status: "passed", message: `login name '${row.sftpUsername}' on ${ctx.settings.sftpHost}:${ctx.settings.sftpPort}` });
    checks.push(
      has(row.sftpPasswordEnc) || has(row.awsPublicKey)
        ? { name: "credentials", status: "passed", message: "a password or public key is set for partner logins" }
        : { name: "credentials", status: "failed", message: "set sftpPassword or awsPublicKey so that your partner can log in" },
    );
    checks.push({ name: "hosted_server", status: "skipped", message: "not checked: this version does not run the hosted SFTP server yet" });
  } else if (server) {
    const probe = await ctx.sftp.probe({ host: server.host, port: server.port });
    if (probe.ok) {
      checks.push({ name: "tcp_connect", status: "passed", message: `${server.host}:${server.port} accepted a connection`, durationMs: probe.durationMs });
      checks.push({ name: "ssh_handshake", status: "passed", message: `server identifies as '${probe.banner}'`, durationMs: probe.durationMs });
    } else if (probe.stage === "connect") {
      checks.push({ name: "tcp_connect", status: "failed", message: `${server.host}:${server.port}: ${probe.reason}`, durationMs: probe.durationMs });
      checks.push({ name: "ssh_handshake", status: "skipped", message: "not checked: no connection" });
    } else {
      checks.push({ name: "tcp_connect", status: "passed", message: `${server.host}:${server.port} accepted a connection` });
      checks.push({ name: "ssh_handshake", status: "failed", message: probe.reason, durationMs: probe.durationMs });
    }
    const creds = has(row.sftpUsername) && (has(row.sftpPasswordEnc) || has(row.sftpPrivateKeyEnc));
    checks.push(
      creds
        ? { name: "credentials", status: "passed", message: "a username and a password or private key are set" }
        : { name: "credentials", status: "failed", message: "set sftpUsername and sftpPassword or sftpPrivateKey" },
    );
    checks.push({ name: "login", status: "skipped", message: "not checked: this version does not log in to customer servers yet" });
  }
  return { ok: checks.every((c) => c.status !== "failed"), connectionId: row.id, checks };
}
