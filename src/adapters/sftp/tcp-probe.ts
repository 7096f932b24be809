import { createConnection } from "node:net";
import type { ProbeResult, SftpEndpoint } from "./port";

/**
 * Opens a TCP connection and waits for the server's first line of its kind,
 * without sending anything: SSH servers identify first (RFC 4253 4.2:
 * `SSH-protoversion-softwareversion`, possibly after other lines), SMTP
 * servers greet first (RFC 5321 4.2: `220 ...`).
 */
export function probeBanner(
  { host, port }: SftpEndpoint,
  opts: { timeoutMs?: number; protocol: "SSH" | "SMTP" },
): Promise<ProbeResult> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  const matches = opts.protocol === "SSH" ? (l: string) => l.startsWith("SSH-") : (l: string) => /^220[ -]/.test(l) || l === "220";
  const refused = opts.protocol === "SMTP" ? (l: string) => /^[45]\d\d[ -]/.test(l) : () => false;
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<ProbeResult>((resolve) => {
    let connected = false;
    let buffered = "";
    const socket = createConnection({ host, port });
    const done = (r: ProbeResult) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on("error", () => {});
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(
      () =>
        done({
          ok: false,
          stage: connected ? "handshake" : "connect",
          reason: connected ? `no ${opts.protocol} greeting within ${timeoutMs} ms` : `no answer within ${timeoutMs} ms`,
          durationMs: elapsed(),
        }),
      timeoutMs,
    );
    socket.on("connect", () => (connected = true));
    socket.on("data", (chunk) => {
      buffered += chunk.toString("latin1");
      const lines = buffered.split(/\r?\n/).slice(0, -1);
      const line = lines.find(matches);
      if (line) return done({ ok: true, banner: line.trim(), durationMs: elapsed() });
      const bad = lines.find(refused);
      if (bad) return done({ ok: false, stage: "handshake", reason: `the server refused: ${bad.trim().slice(0, 200)}`, durationMs: elapsed() });
      if (buffered.length > 8192 || (opts.protocol === "SMTP" && lines.length > 0)) {
        done({ ok: false, stage: "handshake", reason: `the server did not identify as ${opts.protocol}`, durationMs: elapsed() });
      }
    });
    socket.on("error", (e: NodeJS.ErrnoException) =>
      done({ ok: false, stage: connected ? "handshake" : "connect", reason: e.code ?? e.message, durationMs: elapsed() }),
    );
    socket.on("end", () =>
      done({ ok: false, stage: "handshake", reason: `the server closed the connection without an ${opts.protocol} greeting`, durationMs: elapsed() }),
    );
  });
}

/** The SSH identification line of a server, without logging in. */
export const tcpProbe = {
  probe(endpoint: SftpEndpoint, { timeoutMs = 5000 }: { timeoutMs?: number } = {}): Promise<ProbeResult> {
    return probeBanner(endpoint, { timeoutMs, protocol: "SSH" });
  },
};
