import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The real OpenSSH `sftp` client against a server on loopback, run as a
 * child process (never spawnSync: the server under test lives in this
 * process and must keep answering). `-b` runs a batch and stops at the first
 * failing command unless it is prefixed with `-`.
 */
export interface SftpLogin {
  port: number;
  user: string;
  password?: string;
  /** Private key file for public-key login. */
  identity?: string;
  host?: string;
  /** More `ssh` options, e.g. `-o BindAddress=127.0.0.2` to come from another loopback address. */
  extraArgs?: string[];
}

export interface SftpResult {
  code: number;
  stdout: string;
  stderr: string;
}

let askpassScript: string | undefined;

/**
 * Environment that makes OpenSSH's own clients take `password` without a
 * terminal: SSH_ASKPASS names a program whose output is the password, and
 * SSH_ASKPASS_REQUIRE=force makes ssh use it even without DISPLAY (OpenSSH
 * 8.4+). The script only echoes a variable, so the password never appears
 * in a command line.
 */
export function askpassEnv(password: string): Record<string, string> {
  if (!askpassScript || !existsSync(askpassScript)) {
    askpassScript = join(mkdtempSync(join(tmpdir(), "fps-askpass-")), "askpass.sh");
    writeFileSync(askpassScript, '#!/bin/sh\nprintf \'%s\\n\' "$FPS_SSH_PASSWORD"\n', { mode: 0o700 });
  }
  return { ...(process.env as Record<string, string>), SSH_ASKPASS: askpassScript, SSH_ASKPASS_REQUIRE: "force", FPS_SSH_PASSWORD: password };
}

export async function sftpBatch(login: SftpLogin, commands: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<SftpResult> {
  const dir = mkdtempSync(join(tmpdir(), "fps-sftp-batch-"));
  const batch = join(dir, "batch");
  writeFileSync(batch, `${commands.join("\n")}\n`);
  const common = [
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "LogLevel=ERROR",
    "-o", "ConnectTimeout=10",
    "-P", String(login.port),
    "-b", batch,
    ...(login.extraArgs ?? []),
  ];
  const auth = login.identity
    ? ["-i", login.identity, "-o", "IdentitiesOnly=yes", "-o", "PreferredAuthentications=publickey", "-o", "PasswordAuthentication=no"]
    : ["-o", "BatchMode=no", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password", "-o", "NumberOfPasswordPrompts=1"];
  const argv = ["sftp", ...auth, ...common, `${login.user}@${login.host ?? "127.0.0.1"}`];
  const env = login.identity ? undefined : askpassEnv(login.password ?? "");
  const proc = Bun.spawn(argv, { cwd: opts.cwd ?? dir, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** An ed25519 key pair made by OpenSSH's own ssh-keygen: the private key file and the public key line. */
export async function sshKeyPair(comment = "partner@example.com"): Promise<{ privateKeyFile: string; publicKey: string }> {
  const dir = mkdtempSync(join(tmpdir(), "fps-sftp-key-"));
  const file = join(dir, "id_ed25519");
  const proc = Bun.spawn(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { stdout: "ignore", stderr: "pipe" });
  if ((await proc.exited) !== 0) throw new Error(`ssh-keygen failed: ${await new Response(proc.stderr).text()}`);
  return { privateKeyFile: file, publicKey: readFileSync(`${file}.pub`, "utf8").trim() };
}

/** The host key a server presents, as `ssh-keyscan` sees it (`ssh-ed25519 AAAA...`). */
export async function scanHostKey(port: number, host = "127.0.0.1"): Promise<string> {
  const proc = Bun.spawn(["ssh-keyscan", "-p", String(port), "-t", "ed25519", host], { stdout: "pipe", stderr: "ignore" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const line = out.split("\n").find((l) => l.includes("ssh-ed25519"));
  if (!line) throw new Error(`ssh-keyscan found no ed25519 host key on ${host}:${port}`);
  return line.split(" ").slice(1, 3).join(" ");
}

/**
 * The OpenSSH `sftp` client reading its batch from stdin (`-b -`), so a test
 * can send commands one at a time while the connection stays open. Like a
 * batch file, the first failing command ends it with a non-zero status.
 */
export function sftpLive(login: SftpLogin & { password: string }, opts: { cwd: string }) {
  const argv = [
    "sftp",
    "-o", "BatchMode=no", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password", "-o", "NumberOfPasswordPrompts=1",
    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10",
    "-P", String(login.port), "-b", "-", `${login.user}@${login.host ?? "127.0.0.1"}`,
  ];
  const proc = Bun.spawn(argv, { cwd: opts.cwd, env: askpassEnv(login.password), stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  let stdout = "";
  const reading = (async () => {
    for await (const chunk of proc.stdout) stdout += new TextDecoder().decode(chunk);
  })();
  const stderr = new Response(proc.stderr).text();
  return {
    send(line: string) {
      proc.stdin.write(`${line}\n`);
      proc.stdin.flush();
    },
    /** Waits until the output so far contains `text`. */
    async waitFor(text: string, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!stdout.includes(text)) {
        if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`sftp printed no '${text}'; it printed: ${stdout} ${proc.exitCode !== null ? await stderr : ""}`);
        await Bun.sleep(20);
      }
    },
    /** Ends the batch and waits for the client to exit. */
    async end(): Promise<SftpResult> {
      proc.stdin.end();
      const code = await proc.exited;
      await reading;
      return { code, stdout, stderr: await stderr };
    },
    kill: () => proc.kill("SIGKILL"),
  };
}
