/** What the services need from an SFTP client. Expected outcomes are data, not exceptions. */
export interface SftpEndpoint {
  host: string;
  port: number;
}

export type ProbeResult =
  | { ok: true; banner: string; durationMs: number }
  | { ok: false; stage: "connect" | "handshake"; reason: string; durationMs: number };

export interface SftpClientPort {
  /** Opens a TCP connection and reads the SSH identification line; does not log in. */
  probe(endpoint: SftpEndpoint, opts?: { timeoutMs?: number }): Promise<ProbeResult>;
}
