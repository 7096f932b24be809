import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tcpProbe } from "../../src/adapters/sftp/tcp-probe";

/*
 * A throwaway OpenSSH server on loopback for the customer-SFTP tests: the
 * real `sshd` from Debian's openssh-server, a config, host key and
 * authorized_keys in a temp folder, an unprivileged port, `internal-sftp`.
 *
 * Logins go to a dedicated system user (`fpstest`) so that password logins
 * are real (sshd checks /etc/shadow) and permissions are real (a folder with
 * mode 0555 is unwritable for it; root would write anyway). The helper creates
 * the user when missing and (re)sets its password; that needs root, as does
 * sshd itself. `npm test` (scripts/test-prereqs.sh) installs openssh-server
 * and creates /run/sshd, which sshd needs; so does this helper.
 */
export const TEST_USER = "fpstest";
export const TEST_PASSWORD = "fps-test-Pw-7h2k";
export const KEY_PASSPHRASE = "correct horse battery staple";

export interface Sshd {
  host: string;
  port: number;
  user: string;
  password: string;
  /** A folder owned by the test user; connections use it as their rootDirectory. */
  root: string;
  /** OpenSSH-format ed25519 key without a passphrase, and one with KEY_PASSPHRASE. */
  privateKey: string;
  encryptedKey: string;
  /** PEM (PKCS#1) RSA key protected with KEY_PASSPHRASE. */
  encryptedPemKey: string;
  /** Creates `path` (relative to root) owned by the test user. */
  mkdir(path: string, mode?: number): string;
  /** Writes a file inside root, owned by the test user, with an optional mtime (seconds). */
  write(path: string, content: string | Uint8Array, opts?: { mtime?: number }): string;
  log(): string;
  stop(): Promise<void>;
}

let userReady = false;

/** Creates the test user when missing and sets its password (idempotent; serialised across test processes). */
export function ensureTestUser(): void {
  if (userReady) return;
  if (process.getuid?.() !== 0) {
    throw new Error("the customer-SFTP tests start sshd and log in as a system user: run them as root (sudo npm test)");
  }
  const script = `id -u ${TEST_USER} >/dev/null 2>&1 || useradd -m -s /usr/sbin/nologin ${TEST_USER}; echo '${TEST_USER}:${TEST_PASSWORD}' | chpasswd`;
  execFileSync("flock", ["/tmp/fps-testuser.lock", "sh", "-c", script], { stdio: "pipe" });
  if (!existsSync("/run/sshd")) mkdirSync("/run/sshd", { mode: 0o755 });
  userReady = true;
}

function ids(): { uid: number; gid: number } {
  const [uid, gid] = execFileSync("sh", ["-c", `id -u ${TEST_USER}; id -g ${TEST_USER}`]).toString().trim().split("\n").map(Number);
  return { uid: uid!, gid: gid! };
}

function keygen(file: string, args: string[]): void {
  execFileSync("ssh-keygen", ["-q", "-f", file, "-C", "fps-test", ...args], { stdio: "pipe" });
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** `config`: extra sshd_config lines (e.g. `Ciphers ...`). */
export async function startSshd(opts: { config?: string[] } = {}): Promise<Sshd> {
  ensureTestUser();
  const { uid, gid } = ids();
  const dir = mkdtempSync(join(tmpdir(), "fps-sshd-"));
  chmodSync(dir, 0o755); // sshd reads authorized_keys as the user
  keygen(join(dir, "host_key"), ["-t", "ed25519", "-N", ""]);
  keygen(join(dir, "client_key"), ["-t", "ed25519", "-N", ""]);
  keygen(join(dir, "client_key_enc"), ["-t", "ed25519", "-N", KEY_PASSPHRASE]);
  keygen(join(dir, "client_rsa_pem"), ["-t", "rsa", "-b", "2048", "-m", "PEM", "-N", KEY_PASSPHRASE]);
  const pubs = ["client_key", "client_key_enc", "client_rsa_pem"].map((k) => readFileSync(join(dir, `${k}.pub`), "utf8").trim());
  writeFileSync(join(dir, "authorized_keys"), `${pubs.join("\n")}\n`, { mode: 0o644 });

  const root = join(dir, "home");
  mkdirSync(root, { mode: 0o755 });
  chownSync(root, uid, gid);

  let lastError = "";
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const config = join(dir, "sshd_config");
    writeFileSync(
      config,
      [
        // sshd takes the first value of a keyword: the caller's lines come first.
        ...(opts.config ?? []),
        "ListenAddress 127.0.0.1",
        `Port ${port}`,
        `HostKey ${join(dir, "host_key")}`,
        "PidFile none",
        `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication yes",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PermitRootLogin no",
        `AllowUsers ${TEST_USER}`,
        "MaxAuthTries 10",
        "MaxStartups 100",
        "LogLevel VERBOSE",
        "Subsystem sftp internal-sftp",
        "ForceCommand internal-sftp",
        "",
      ].join("\n"),
    );
    execFileSync("/usr/sbin/sshd", ["-t", "-f", config], { stdio: "pipe" });
    const child: ChildProcess = spawn("/usr/sbin/sshd", ["-D", "-e", "-f", config], { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    child.stderr?.on("data", (d) => (log += d.toString()));
    let exited = false;
    child.on("exit", () => (exited = true));
    const started = Date.now();
    while (!exited && Date.now() - started < 10_000) {
      const p = await tcpProbe.probe({ host: "127.0.0.1", port }, { timeoutMs: 1000 });
      if (p.ok) break;
      await Bun.sleep(50);
    }
    if (exited) {
      lastError = log;
      continue;
    }
    const file = (path: string) => join(root, path);
    return {
      host: "127.0.0.1",
      port,
      user: TEST_USER,
      password: TEST_PASSWORD,
      root,
      privateKey: readFileSync(join(dir, "client_key"), "utf8"),
      encryptedKey: readFileSync(join(dir, "client_key_enc"), "utf8"),
      encryptedPemKey: readFileSync(join(dir, "client_rsa_pem"), "utf8"),
      mkdir(path, mode = 0o755) {
        let cur = root;
        for (const seg of path.split("/").filter(Boolean)) {
          cur = join(cur, seg);
          if (!existsSync(cur)) {
            mkdirSync(cur);
            chownSync(cur, uid, gid);
          }
        }
        chmodSync(cur, mode);
        return cur;
      },
      write(path, content, opts = {}) {
        const f = file(path);
        writeFileSync(f, content);
        chownSync(f, uid, gid);
        if (opts.mtime !== undefined) execFileSync("touch", ["-m", "-d", `@${opts.mtime}`, f]);
        return f;
      },
      log: () => log,
      async stop() {
        if (!exited) {
          const gone = new Promise((r) => child.once("exit", r));
          child.kill("SIGTERM");
          await Promise.race([gone, Bun.sleep(3000)]);
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`sshd did not start: ${lastError}`);
}
