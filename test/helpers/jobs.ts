import { join } from "node:path";
import type { Subprocess } from "bun";
import type { JobWorkerConfig } from "./job-worker";

/** Polls `check` until it returns true; fails with `what` after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

/** A promise with its resolve handle, to hold a handler until the test lets it go. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

/** A job-queue child process (test/helpers/job-worker.ts) with its stdout lines. */
export class JobWorkerProcess {
  readonly lines: string[] = [];
  private stderr = "";
  private constructor(readonly proc: Subprocess<"ignore", "pipe", "pipe">) {
    void this.read();
  }

  static async start(cfg: JobWorkerConfig): Promise<JobWorkerProcess> {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "job-worker.ts"), JSON.stringify(cfg)], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const w = new JobWorkerProcess(proc);
    await w.waitForLine((l) => l === "ready", 20_000);
    return w;
  }

  private async read(): Promise<void> {
    const decoder = new TextDecoder();
    let buf = "";
    void new Response(this.proc.stderr).text().then((t) => (this.stderr = t));
    for await (const chunk of this.proc.stdout) {
      buf += decoder.decode(chunk, { stream: true });
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        this.lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    }
  }

  async waitForLine(match: (line: string) => boolean, timeoutMs = 10_000): Promise<string> {
    try {
      await waitFor("a line from the job worker", () => this.lines.some(match) || this.proc.exitCode !== null, timeoutMs);
    } catch (e) {
      throw new Error(`${(e as Error).message}; lines: ${JSON.stringify(this.lines)}; stderr: ${this.stderr}`);
    }
    const line = this.lines.find(match);
    if (!line) throw new Error(`job worker exited (${this.proc.exitCode}); lines: ${JSON.stringify(this.lines)}; stderr: ${this.stderr}`);
    return line;
  }

  /** A crash: no shutdown code runs, connections drop. */
  async kill(): Promise<void> {
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }

  /** Graceful stop; resolves with the exit code. */
  async stop(): Promise<number> {
    this.proc.kill("SIGTERM");
    return this.proc.exited;
  }
}
