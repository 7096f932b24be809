import type { AddressInfo } from "node:net";
import ipaddr from "ipaddr.js";
import { type AuthContext, type CipherAlgorithm, type Connection, Server, utils } from "ssh2";
import type { ServiceContext } from "../services/context";
import { authenticateHostedLogin, type HostedAccount, type LoginCredential, LoginGuard, type LoginPolicy } from "../services/sftp-accounts";
import { SpaceFiles } from "../services/space-files";
import { type HostKey, loadHostKey } from "./host-key";
import "./packet-size";
import { SftpSession } from "./session";

export interface HostedSftpOptions {
  dataDir: string;
  /** SFTP_HOST_KEY: a path or the key itself; null keeps a generated one in dataDir. */
  hostKey: string | null;
  login: LoginPolicy;
  /** A connection that has not logged in by then is closed. */
  loginGraceMs?: number;
  /** Authentication requests with a credential per connection before it is closed (OpenSSH's MaxAuthTries). */
  maxAuthTries?: number;
}

/** How long a stopping server waits for a client whose close it just answered to leave by itself. */
const LINGER_MS = 1000;

/**
 * Bun's crypto has no chacha20-poly1305, so the server offers AES-GCM first,
 * then AES-CTR (with an encrypt-then-MAC SHA-2 MAC); every current OpenSSH,
 * PuTTY, WinSCP and FileZilla client accepts these.
 */
const CIPHERS: CipherAlgorithm[] = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes192-ctr", "aes256-ctr"];

/**
 * The hosted SFTP server: ssh2 in the service's process. Partners log in as
 * their hosted connection (src/services/sftp-accounts) and see only that
 * connection's file space (src/services/space-files) through the SFTP
 * subsystem; shells, commands and forwarding are refused.
 */
export class HostedSftpServer {
  private server: Server | null = null;
  private readonly clients = new Set<Connection>();
  /** Each SFTP channel open, with its connection. */
  private readonly sessions = new Map<SftpSession, Connection>();
  private readonly guard: LoginGuard;
  private key: HostKey | null = null;
  private boundPort: number | null = null;
  /** Between close() and the end of the sessions: no new SFTP channel is opened. */
  private stopping = false;

  constructor(
    private readonly svc: ServiceContext,
    private readonly opts: HostedSftpOptions,
  ) {
    this.guard = new LoginGuard(opts.login, () => svc.clock.now().getTime());
  }

  /** The port listened on (the ephemeral one when asked for 0); null before listen. */
  get port(): number | null {
    return this.boundPort;
  }

  /** Accepting connections (readiness). */
  get listening(): boolean {
    return this.server !== null && this.boundPort !== null;
  }

  get hostKey(): HostKey | null {
    return this.key;
  }

  /** Loads (or on first start generates) the host key and starts listening; resolves with the bound port. */
  async listen(port: number, host: string): Promise<number> {
    if (this.server) throw new Error("the SFTP server is already listening");
    this.key = loadHostKey({ dataDir: this.opts.dataDir, configured: this.opts.hostKey });
    const server = new Server(
      // Keepalives drop a peer that vanished without closing (its unfinished upload is then aborted) after about a minute.
      { hostKeys: [this.key.pem], ident: "FilePipelineService", algorithms: { cipher: CIPHERS }, keepaliveInterval: 15_000, keepaliveCountMax: 4 },
      (client, info) => this.onConnection(client, info.ip),
    );
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err: Error) => this.svc.log.error({ err }, "sftp server error"));
    this.server = server;
    this.boundPort = (server.address() as AddressInfo).port;
    // What connections announce and test-connection probes: the port actually bound (SFTP_PORT=0 picks one).
    this.svc.settings.sftpPort = this.boundPort;
    return this.boundPort;
  }

  /**
   * Stops accepting connections and ends every session. Files whose CLOSE is
   * being answered (stored, runs starting) get up to `graceMs` to finish and
   * be acknowledged; meanwhile no file is opened. Uploads not closed by then
   * are aborted (they store nothing).
   */
  async close(opts: { graceMs?: number } = {}): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    this.stopping = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const sessions = [...this.sessions.keys()];
    for (const s of sessions) s.refuseOpens();
    // Closes being answered, and those that arrive meanwhile, are waited for up to the grace.
    const deadline = Date.now() + (opts.graceMs ?? 5000);
    for (;;) {
      const busy = sessions.map((s) => s.closingsInProgress()).filter((p) => p !== null);
      const left = deadline - Date.now();
      if (busy.length === 0 || left <= 0) break;
      await Promise.race([Promise.all(busy), Bun.sleep(left)]);
    }
    // A client just told its file was stored usually says goodbye itself: ended first, it could report the
    // dropped connection as an error. It gets a moment (at most a second, within the grace).
    const answered = new Set<Connection>();
    for (const s of sessions) {
      const c = this.sessions.get(s);
      if (s.answeredWhileStopping && c && this.clients.has(c)) answered.add(c);
    }
    const linger = Math.min(LINGER_MS, deadline - Date.now());
    if (answered.size > 0 && linger > 0) {
      await Promise.race([Promise.all([...answered].map((c) => new Promise<void>((resolve) => c.once("close", () => resolve())))), Bun.sleep(linger)]);
    }
    await Promise.all(sessions.map((s) => s.end()));
    const ends = [...this.clients].map((c) => new Promise<void>((resolve) => (c.once("close", () => resolve()), c.end())));
    await Promise.race([Promise.all(ends), Bun.sleep(2000)]);
    for (const c of this.clients) (c as unknown as { _sock?: { destroy(): void } })._sock?.destroy();
    await Promise.race([closed, Bun.sleep(2000)]);
    this.boundPort = null;
    this.stopping = false;
  }

  private onConnection(client: Connection, ip: string): void {
    const remoteAddress = canonicalAddress(ip);
    const { loginGraceMs = 60_000, maxAuthTries = 6 } = this.opts;
    this.clients.add(client);
    const sessions = new Set<SftpSession>();
    let account: HostedAccount | null = null;
    let tries = 0;
    let loggedIn = false;
    const grace = setTimeout(() => {
      if (!account) client.end();
    }, loginGraceMs);

    client.on("authentication", (ctx) => {
      if (ctx.method !== "none" && !(ctx.method === "publickey" && !ctx.signature) && ++tries > maxAuthTries) {
        ctx.reject();
        client.end();
        return;
      }
      void this.authenticate(ctx, remoteAddress, (a) => (account = a)).catch(
        (err) => {
          this.svc.log.error({ err, remoteAddress }, "sftp login check failed");
          ctx.reject(["password", "publickey"]);
        },
      );
    });

    client.on("ready", () => {
      clearTimeout(grace);
      loggedIn = true;
      this.svc.metrics.sftpSessionOpened();
      const files = new SpaceFiles(this.svc, account!);
      client.on("session", (accept) => {
        const session = accept();
        session.on("sftp", (acceptSftp, rejectSftp) => {
          if (this.stopping) return rejectSftp();
          const s = new SftpSession(acceptSftp(), files, this.svc.log);
          sessions.add(s);
          this.sessions.set(s, client);
        });
        // Everything but the SFTP subsystem is refused.
        session.on("pty", (_a, reject) => reject?.());
        session.on("shell", (_a, reject) => reject());
        session.on("exec", (_a, reject) => reject());
        session.on("subsystem", (_a, reject) => reject());
        session.on("env", (_a, reject) => reject?.());
      });
      client.on("tcpip", (_a, reject) => reject());
      client.on("request", (_a, reject) => reject?.());
    });

    client.on("error", (err: Error) => this.svc.log.debug({ err: err.message, remoteAddress }, "sftp connection error"));
    client.on("close", () => {
      clearTimeout(grace);
      if (loggedIn) this.svc.metrics.sftpSessionClosed();
      loggedIn = false;
      this.clients.delete(client);
      for (const s of sessions) {
        this.sessions.delete(s);
        void s.dispose("the connection closed before the file was closed");
      }
    });
  }

  /** Answers one authentication request; `accepted` gets the account before the session can start. */
  private async authenticate(ctx: AuthContext, remoteAddress: string, accepted: (a: HostedAccount) => void): Promise<void> {
    const credential = credentialOf(ctx);
    const outcome = await authenticateHostedLogin(this.svc, this.guard, { username: ctx.username, remoteAddress, credential });
    // "none" asks which methods there are, and an unsigned public key whether it would do: neither is a login attempt.
    if (ctx.method !== "none" && outcome.ok !== "key_acceptable") {
      const method = ctx.method === "password" || ctx.method === "publickey" ? ctx.method : "other";
      this.svc.metrics.sftpLogin(method, outcome.ok === true ? "success" : "failure");
    }
    if (outcome.ok === true) {
      accepted(outcome.account);
      ctx.accept();
    } else if (outcome.ok === "key_acceptable") {
      ctx.accept();
    } else {
      if (outcome.delayMs > 0) await Bun.sleep(outcome.delayMs);
      ctx.reject(["password", "publickey"]);
    }
  }
}

function credentialOf(ctx: AuthContext): LoginCredential {
  switch (ctx.method) {
    case "none":
      return { method: "none" };
    case "password":
      return { method: "password", password: ctx.password };
    case "publickey": {
      const { key, signature, blob, hashAlgo } = ctx;
      if (!signature || !blob) return { method: "publickey", keyBlob: key.data, signed: false };
      return {
        method: "publickey",
        keyBlob: key.data,
        signed: true,
        verifySignature: (line) => {
          const parsed = utils.parseKey(line);
          const stored = parsed instanceof Error ? null : Array.isArray(parsed) ? parsed[0] : parsed;
          if (!stored) return false;
          try {
            return stored.verify(blob, signature, hashAlgo) === true;
          } catch {
            return false;
          }
        },
      };
    }
    default:
      return { method: "other", name: ctx.method };
  }
}

/** IPv4 peers on a dual-stack socket arrive as `::ffff:a.b.c.d`: counted and logged as `a.b.c.d`. */
function canonicalAddress(ip: string): string {
  try {
    return ipaddr.process(ip).toString();
  } catch {
    return ip;
  }
}
