import { createConnection } from "node:net";
import type { ProbeResult, SftpClientPort } from "./port";

/** RFC 4253 4.2: the server sends `SSH-protoversion-softwareversion` first, before any key exchange. */
export const tcpProbe: SftpClientPort = {
  probe({ host, port }, { timeoutMs = 5000 } = {}) {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    return new Promise<ProbeResult>((resolve) => {
      let connected = false;
      let buffered = "";
      const socket = createConnection({ host, port });
      const done = (r: ProbeResult) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(r);
      };
      const timer = setTimeout(
        () =>
          done({
            ok: false,
            stage: connected ? "handshake" : "connect",
            reason: connected ? `no SSH identification within ${timeoutMs} ms` : `no answer within ${timeoutMs} ms`,
            durationMs: elapsed(),
          }),
        timeoutMs,
      );
      socket.on("connect", () => (connected = true));
      socket.on("data", (chunk) => {
        buffered += chunk.toString("latin1");
        // Servers may send other lines before the identification line (RFC 4253 4.2).
        const line = buffered.split(/\r?\n/).slice(0, -1).find((l) => l.startsWith("SSH-"));
        if (line) done({ ok: true, banner: line.trim(), durationMs: elapsed() });
        else if (buffered.length > 8192) {
          done({ ok: false, stage: "handshake", reason: "the server did not identify as SSH", durationMs: elapsed() });
        }
      });
      socket.on("error", (e: NodeJS.ErrnoException) =>
        done({ ok: false, stage: connected ? "handshake" : "connect", reason: e.code ?? e.message, durationMs: elapsed() }),
      );
      socket.on("end", () =>
        done({ ok: false, stage: "handshake", reason: "the server closed the connection without an SSH identification", durationMs: elapsed() }),
      );
    });
  },
};
