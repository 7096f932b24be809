/**
 * What the services need from an SFTP client (a customer's own server).
 * Expected outcomes (refused connection, wrong password, missing folder,
 * permission denied, timeout) are data, not exceptions; only a read stream
 * that breaks in the middle throws, because its reader has to stop.
 */
export interface SftpEndpoint {
  host: string;
  port: number;
}

export type ProbeResult =
  | { ok: true; banner: string; durationMs: number }
  | { ok: false; stage: "connect" | "handshake"; reason: string; durationMs: number };

/** A password, or a private key (PEM or OpenSSH format) with an optional passphrase; both may be given. */
export interface SftpCredentials {
  username: string;
  password?: string | null;
  privateKey?: string | null;
  passphrase?: string | null;
}

export interface SftpLogin extends SftpEndpoint {
  credentials: SftpCredentials;
  /** TCP connect, key exchange and authentication together (default 15 s). */
  timeoutMs?: number;
  /** Each later request, and each pause of a read or write stream (default 30 s). */
  operationTimeoutMs?: number;
}

/** Where a login stopped: no TCP connection, no SSH key exchange, credentials refused, or no SFTP subsystem. */
export type LoginStage = "connect" | "handshake" | "auth" | "sftp";

export type LoginResult =
  | { ok: true; session: SftpSession; /** The server's host key, `SHA256:...` as OpenSSH prints it. */ hostKey: string; durationMs: number }
  | { ok: false; stage: LoginStage; reason: string; durationMs: number };

export type SftpErrorCode =
  | "not_found"
  | "permission_denied"
  | "exists"
  | "not_a_directory"
  | "unsupported"
  | "failure"
  | "timeout"
  | "connection_lost";

export type SftpResult<T = void> = { ok: true; value: T } | { ok: false; code: SftpErrorCode; reason: string };

export interface SftpEntry {
  name: string;
  /** Absolute remote path. */
  path: string;
  type: "file" | "directory" | "symlink" | "other";
  size: number;
  /** Modification time in whole seconds since the epoch (SFTP v3 has no finer resolution). */
  mtime: number;
}

export type UploadBody = Uint8Array | string | AsyncIterable<Uint8Array>;

export interface SftpSession {
  /** The entries of a folder, without `.` and `..`; a symlink is reported as what it points to. */
  list(dir: string): Promise<SftpResult<SftpEntry[]>>;
  stat(path: string): Promise<SftpResult<SftpEntry>>;
  /** The file's bytes. Nothing is opened until the first read; a failure or a stall while reading throws. */
  read(path: string): AsyncIterable<Uint8Array>;
  /**
   * Writes `body` under a temporary name in the same folder (`.fps.<name>.<key>.<random>.part`,
   * temp-names.ts; `tempKey` names the delivery, random when not given), then renames it to
   * `path`. With `overwrite` an existing file is replaced (atomically where the server offers
   * `posix-rename@openssh.com`); without, an existing file makes it fail with `exists`. The temporary
   * file is removed on failure (a process killed meanwhile leaves it: see parseTemporaryName).
   */
  upload(path: string, body: UploadBody, opts?: { overwrite?: boolean; tempKey?: string }): Promise<SftpResult<{ size: number; tempPath: string }>>;
  rename(from: string, to: string, opts?: { overwrite?: boolean }): Promise<SftpResult>;
  /** Creates `dir` and any missing parents; an existing folder is fine. */
  mkdirp(dir: string): Promise<SftpResult>;
  remove(path: string): Promise<SftpResult>;
  /** Whether `dir` can be listed and, when asked, written: writes and removes a small probe file with a temporary name. */
  checkFolder(dir: string, opts?: { write?: boolean }): Promise<{ readable: SftpResult<{ entries: number }>; writable?: SftpResult }>;
  close(): Promise<void>;
}

export interface SftpClientPort {
  /** Opens a TCP connection and reads the SSH identification line; does not log in. */
  probe(endpoint: SftpEndpoint, opts?: { timeoutMs?: number }): Promise<ProbeResult>;
  /** Logs in and opens the SFTP subsystem. Never hangs: every step has a timeout. */
  login(login: SftpLogin): Promise<LoginResult>;
}
