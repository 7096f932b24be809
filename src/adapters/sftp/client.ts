import { createHash, randomBytes } from "node:crypto";
import { posix } from "node:path";
import { Client, type SFTPWrapper } from "ssh2";
import { RESERVED_NAME } from "../../domain/reserved";
import type { LoginResult, SftpClientPort, SftpEntry, SftpErrorCode, SftpLogin, SftpResult, SftpSession, UploadBody } from "./port";
import { tcpProbe } from "./tcp-probe";
import { temporaryName } from "./temp-names";

/**
 * The SFTP client for customers' own servers: ssh2 (pure JavaScript) under Bun.
 *
 * Ciphers are offered explicitly: ssh2 picks its defaults from what the
 * runtime's crypto lists, and Bun's crypto has no chacha20-poly1305, so a
 * negotiated chacha20 would fail. AES-GCM and AES-CTR are what OpenSSH (and
 * nearly every SFTP server) accepts by default; a server that allows only
 * chacha20-poly1305 cannot be reached from this service.
 */
export const CIPHERS = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "aes128-ctr", "aes192-ctr", "aes256-ctr"];

const DEFAULT_LOGIN_TIMEOUT_MS = 15_000;
const DEFAULT_OPERATION_TIMEOUT_MS = 30_000;
/** Bytes per WRITE request and requests in flight: one round trip per request would make a far server slow. */
const WRITE_CHUNK = 32 * 1024;
const WRITE_WINDOW = 16;
const READ_CHUNK = 64 * 1024;

// SSH_FX_* status codes (draft-ietf-secsh-filexfer-02, section 7).
const STATUS: Record<number, SftpErrorCode> = { 2: "not_found", 3: "permission_denied", 6: "connection_lost", 7: "connection_lost", 8: "unsupported" };

type SshError = Error & { level?: string; code?: number | string };

export function createSftpClient(): SftpClientPort {
  return { probe: tcpProbe.probe, login };
}

export const sftpClient: SftpClientPort = createSftpClient();

function login(l: SftpLogin): Promise<LoginResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeoutMs = l.timeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS;
  const { credentials: c } = l;
  if (!c.password && !c.privateKey) {
    return Promise.resolve({ ok: false, stage: "auth", reason: "no password or private key is set", durationMs: 0 });
  }
  const client = new Client();
  let connected = false;
  let handshaken = false;
  let authenticated = false;
  let hostKey = "";
  const stage = () => (!connected ? "connect" : !handshaken ? "handshake" : !authenticated ? "auth" : "sftp");

  return new Promise<LoginResult>((resolve) => {
    let settled = false;
    const finish = (r: LoginResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (!r.ok) {
        client.removeAllListeners();
        client.on("error", () => {});
        client.end();
        client.destroy();
      }
      resolve(r);
    };
    const timer = setTimeout(() => {
      const what = { connect: "TCP connection", handshake: "SSH key exchange", auth: "authentication", sftp: "SFTP subsystem" }[stage()];
      finish({ ok: false, stage: stage(), reason: `no answer within ${timeoutMs} ms (${what})`, durationMs: elapsed() });
    }, timeoutMs);

    client.on("connect", () => (connected = true));
    client.on("handshake", () => (handshaken = true));
    client.on("keyboard-interactive", (_name, _instructions, _lang, prompts, answer) => answer(prompts.map(() => c.password ?? "")));
    client.on("error", (err: SshError) => {
      const at = err.level === "client-authentication" ? "auth" : err.level === "client-socket" || err.level === "client-dns" ? (connected ? stage() : "connect") : stage();
      finish({ ok: false, stage: at, reason: describeLoginError(err), durationMs: elapsed() });
    });
    client.on("close", () => finish({ ok: false, stage: stage(), reason: "the server closed the connection", durationMs: elapsed() }));
    client.on("ready", () => {
      authenticated = true;
      client.sftp((err, sftp) => {
        if (err) return finish({ ok: false, stage: "sftp", reason: `the SFTP subsystem was refused: ${err.message}`, durationMs: elapsed() });
        finish({ ok: true, session: new Ssh2Session(client, sftp, l.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS), hostKey, durationMs: elapsed() });
      });
    });
    try {
      client.connect({
        host: l.host,
        port: l.port,
        username: c.username,
        password: c.password ?? undefined,
        privateKey: c.privateKey ?? undefined,
        passphrase: c.passphrase ?? undefined,
        readyTimeout: timeoutMs,
        keepaliveInterval: 10_000,
        keepaliveCountMax: 3,
        // Accepts any host key: connections do not store the customer's host key yet (docs/decisions/customer-sftp.md).
        hostVerifier: (key: Buffer) => {
          hostKey = fingerprint(key);
          return true;
        },
        algorithms: { cipher: CIPHERS as never },
        // Servers that take passwords only through keyboard-interactive (PAM) get the password as the answer.
        tryKeyboard: Boolean(c.password),
      });
    } catch (e) {
      // ssh2 parses the key before connecting: a wrong passphrase or a damaged key throws here.
      finish({ ok: false, stage: "auth", reason: `the private key cannot be used: ${(e as Error).message}`, durationMs: elapsed() });
    }
  });
}

function describeLoginError(err: SshError): string {
  if (err.level === "client-authentication") return "the server refused the credentials (username, password or key)";
  if (typeof err.code === "string" && err.level === "client-socket") return `${err.code}: ${err.message}`;
  if (err.level === "client-timeout") return "no SSH key exchange in time";
  if (/handshake failed|no matching/i.test(err.message)) return `SSH key exchange failed: ${err.message} (this client offers ${CIPHERS.join(", ")})`;
  return err.message;
}

function fail(code: SftpErrorCode, reason: string): { ok: false; code: SftpErrorCode; reason: string } {
  return { ok: false, code, reason };
}

function typeOf(mode: number): SftpEntry["type"] {
  switch (mode & 0o170000) {
    case 0o100000:
      return "file";
    case 0o040000:
      return "directory";
    case 0o120000:
      return "symlink";
    default:
      return "other";
  }
}

class Ssh2Session implements SftpSession {
  private lost: string | null = null;

  constructor(
    private readonly client: Client,
    private readonly sftp: SFTPWrapper,
    private readonly opMs: number,
  ) {
    client.on("error", (e: Error) => (this.lost ??= `connection lost: ${e.message}`));
    client.on("close", () => (this.lost ??= "connection closed"));
  }

  /** One SFTP request with a timeout; a request that gets no answer ends the session (the server is stuck). */
  private call<T>(what: string, fn: (cb: (err: SshError | null | undefined, value?: T) => void) => void): Promise<SftpResult<T>> {
    if (this.lost) return Promise.resolve(fail("connection_lost", `${what}: ${this.lost}`));
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.lost ??= `no answer to ${what} within ${this.opMs} ms`;
        this.client.end();
        resolve(fail("timeout", `${what}: no answer within ${this.opMs} ms`));
      }, this.opMs);
      try {
        fn((err, value) => {
          clearTimeout(timer);
          resolve(err ? this.failure(what, err) : { ok: true, value: value as T });
        });
      } catch (e) {
        clearTimeout(timer);
        resolve(fail("failure", `${what}: ${(e as Error).message}`));
      }
    });
  }

  private failure(what: string, err: SshError): { ok: false; code: SftpErrorCode; reason: string } {
    const code = typeof err.code === "number" ? (STATUS[err.code] ?? "failure") : this.lost || /no response/i.test(err.message) ? "connection_lost" : "failure";
    return fail(code, `${what}: ${err.message}`);
  }

  private entry(path: string, attrs: { mode: number; size: number; mtime: number }): SftpEntry {
    return { name: posix.basename(path), path, type: typeOf(attrs.mode), size: Number(attrs.size), mtime: Number(attrs.mtime) };
  }

  async list(dir: string): Promise<SftpResult<SftpEntry[]>> {
    const r = await this.call<{ filename: string; attrs: { mode: number; size: number; mtime: number } }[]>(`list ${dir}`, (cb) =>
      this.sftp.readdir(dir, cb as never),
    );
    if (!r.ok) return r;
    const out: SftpEntry[] = [];
    for (const e of r.value) {
      if (e.filename === "." || e.filename === "..") continue;
      let entry = this.entry(posix.join(dir, e.filename), e.attrs);
      if (entry.type === "symlink") {
        const target = await this.stat(entry.path);
        if (target.ok) entry = target.value;
      }
      out.push(entry);
    }
    return { ok: true, value: out };
  }

  async stat(path: string): Promise<SftpResult<SftpEntry>> {
    const r = await this.call<{ mode: number; size: number; mtime: number }>(`stat ${path}`, (cb) => this.sftp.stat(path, cb as never));
    return r.ok ? { ok: true, value: this.entry(path, r.value) } : r;
  }

  async *read(path: string): AsyncGenerator<Uint8Array> {
    if (this.lost) throw new SftpStreamError("connection_lost", `reading ${path}: ${this.lost}`);
    const stream = this.sftp.createReadStream(path, { highWaterMark: READ_CHUNK });
    // Closing the handle can fail after the iterator let go (the session ended): nothing is left to tell.
    const quiet = () => stream.on("error", () => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => stream.destroy(new SftpStreamError("timeout", `reading ${path}: no data for ${this.opMs} ms`)), this.opMs);
    };
    arm();
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        arm();
        yield chunk;
      }
    } catch (e) {
      if (e instanceof SftpStreamError) throw e;
      const f = this.failure(`reading ${path}`, e as SshError);
      throw new SftpStreamError(f.code, f.reason);
    } finally {
      clearTimeout(timer);
      quiet();
      if (!stream.destroyed) stream.destroy();
    }
  }

  /** Writes a whole file with several WRITE requests in flight; the handle is closed (and the close checked) at the end. */
  private async writeFile(path: string, body: UploadBody, flags: "w" | "wx"): Promise<SftpResult<{ size: number }>> {
    const opened = await this.call<Buffer>(`open ${path}`, (cb) => this.sftp.open(path, flags, 0o644, cb as never));
    if (!opened.ok) return opened.code === "failure" && flags === "wx" ? fail("exists", opened.reason) : opened;
    const handle = opened.value;
    let position = 0;
    const inFlight = new Set<Promise<SftpResult<unknown>>>();
    const state: { error: { ok: false; code: SftpErrorCode; reason: string } | null } = { error: null };
    const write = (buf: Buffer, at: number) => {
      const p = this.call<number>(`write ${path}`, (cb) => this.sftp.write(handle, buf, 0, buf.length, at, cb as never));
      inFlight.add(p);
      p.then((r) => {
        inFlight.delete(p);
        if (!r.ok) state.error ??= r;
      });
    };
    try {
      const chunks: AsyncIterable<Uint8Array> | Uint8Array[] =
        typeof body === "string" ? [Buffer.from(body)] : body instanceof Uint8Array ? [body] : body;
      for await (const chunk of chunks) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        for (let off = 0; off < buf.length; off += WRITE_CHUNK) {
          while (inFlight.size >= WRITE_WINDOW && !state.error) await Promise.race(inFlight);
          if (state.error) break;
          const piece = buf.subarray(off, off + WRITE_CHUNK);
          write(piece, position);
          position += piece.length;
        }
        if (state.error) break;
      }
      await Promise.all(inFlight);
    } catch (e) {
      await Promise.all(inFlight);
      await this.call(`close ${path}`, (cb) => this.sftp.close(handle, cb));
      throw e; // the body's own failure (e.g. the object store): the caller decides
    }
    const closed = await this.call(`close ${path}`, (cb) => this.sftp.close(handle, cb));
    if (state.error) return state.error;
    if (!closed.ok) return closed;
    return { ok: true, value: { size: position } };
  }

  async upload(path: string, body: UploadBody, opts: { overwrite?: boolean; tempKey?: string } = {}): Promise<SftpResult<{ size: number; tempPath: string }>> {
    if (!opts.overwrite) {
      const existing = await this.stat(path);
      if (existing.ok) return fail("exists", `${path} already exists`);
      if (existing.code !== "not_found") return existing;
    }
    const tempPath = posix.join(posix.dirname(path), temporaryName(posix.basename(path), opts.tempKey));
    let written: SftpResult<{ size: number }>;
    try {
      written = await this.writeFile(tempPath, body, "wx");
    } catch (e) {
      await this.remove(tempPath);
      throw e;
    }
    if (!written.ok) {
      if (written.code !== "exists") await this.remove(tempPath);
      return written;
    }
    const renamed = await this.rename(tempPath, path, { overwrite: opts.overwrite });
    if (!renamed.ok) {
      await this.remove(tempPath);
      return renamed;
    }
    return { ok: true, value: { size: written.value.size, tempPath } };
  }

  async rename(from: string, to: string, opts: { overwrite?: boolean } = {}): Promise<SftpResult> {
    if (!opts.overwrite) {
      // SSH_FXP_RENAME's behaviour on an existing target differs between servers; ask first.
      const existing = await this.stat(to);
      if (existing.ok) return fail("exists", `rename ${from} to ${to}: ${to} already exists`);
      return this.call<void>(`rename ${from} to ${to}`, (cb) => this.sftp.rename(from, to, cb));
    }
    const extensions = (this.sftp as unknown as { _extensions: Record<string, string> })._extensions ?? {};
    if (extensions["posix-rename@openssh.com"]) {
      return this.call<void>(`rename ${from} to ${to}`, (cb) => this.sftp.ext_openssh_rename(from, to, cb));
    }
    const first = await this.call<void>(`rename ${from} to ${to}`, (cb) => this.sftp.rename(from, to, cb));
    if (first.ok || first.code === "timeout" || first.code === "connection_lost") return first;
    const target = await this.stat(to);
    if (!target.ok || target.value.type !== "file") return first;
    const removed = await this.remove(to);
    if (!removed.ok) return removed;
    return this.call<void>(`rename ${from} to ${to}`, (cb) => this.sftp.rename(from, to, cb));
  }

  async mkdirp(dir: string): Promise<SftpResult> {
    const parts = posix.normalize(dir).split("/").filter(Boolean);
    let cur = dir.startsWith("/") ? "/" : "";
    for (const p of parts) {
      cur = cur ? posix.join(cur, p) : p;
      const s = await this.stat(cur);
      if (s.ok) {
        if (s.value.type !== "directory") return fail("not_a_directory", `${cur} exists and is not a folder`);
        continue;
      }
      if (s.code !== "not_found") return s;
      const made = await this.call<void>(`mkdir ${cur}`, (cb) => this.sftp.mkdir(cur, cb));
      if (!made.ok) {
        const again = await this.stat(cur); // made meanwhile by someone else?
        if (!again.ok || again.value.type !== "directory") return made;
      }
    }
    return { ok: true, value: undefined };
  }

  remove(path: string): Promise<SftpResult> {
    return this.call<void>(`remove ${path}`, (cb) => this.sftp.unlink(path, cb));
  }

  async checkFolder(dir: string, opts: { write?: boolean } = {}): Promise<{ readable: SftpResult<{ entries: number }>; writable?: SftpResult }> {
    const listed = await this.list(dir);
    const readable: SftpResult<{ entries: number }> = listed.ok ? { ok: true, value: { entries: listed.value.length } } : listed;
    if (!opts.write) return { readable };
    const probe = posix.join(dir, `${RESERVED_NAME}-write-check-${randomBytes(4).toString("hex")}.tmp`);
    const written = await this.writeFile(probe, "file pipeline service write check\n", "wx");
    if (!written.ok) return { readable, writable: written };
    const removed = await this.remove(probe);
    return { readable, writable: removed.ok ? removed : fail(removed.code, `wrote ${probe} but could not remove it: ${removed.reason}`) };
  }

  async close(): Promise<void> {
    if (this.lost === "connection closed") return;
    const closed = new Promise<void>((r) => this.client.once("close", () => r()));
    this.client.end();
    await Promise.race([closed, Bun.sleep(2000)]);
    this.client.destroy();
  }
}

/** A read that failed or stalled in the middle. */
export class SftpStreamError extends Error {
  override readonly name = "SftpStreamError";
  constructor(
    readonly code: SftpErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** `SHA256:<base64>` of a host key blob, as OpenSSH prints fingerprints. */
export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`;
}
