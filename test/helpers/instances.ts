import type { Harness } from "./harness";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Polls `probe` until it answers true; the milliseconds that took, or fails after `limitMs`. */
export async function within(limitMs: number, probe: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await probe()) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) throw new Error(`not within ${limitMs} ms`);
    await Bun.sleep(10);
  }
}

/** A TCP port free on this machine now (the system picks it; a moment later another process may take it). */
export function freePort(): number {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

export interface Instance {
  url: string;
  proc: ReturnType<typeof Bun.spawn>;
  stop(): Promise<void>;
}

/**
 * Another instance of the service on the harness's database: `bun src/main.ts`
 * as its own process (its own pool, caches and LISTEN connection), with
 * `env` on top; answers once its /healthz does.
 */
export async function secondInstance(h: Harness, env: Record<string, string> = {}): Promise<Instance> {
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, ...h.childEnv(), PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: url, WORKERS: "1", SFTP_PORT: "0", SMTP_PORT: "0", ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  await within(30_000, async () => {
    if (proc.exitCode !== null) throw new Error(`the second instance exited with ${proc.exitCode} (its output is above)`);
    return (await fetch(`${url}/healthz`).catch(() => null))?.ok === true;
  });
  return {
    url,
    proc,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
