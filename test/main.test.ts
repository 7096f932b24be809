import { afterAll, beforeAll, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { Harness } from "./helpers/harness";

/** `npm start` as a real process: listens, serves, refuses bad configuration, stops cleanly. */
const ROOT = join(import.meta.dir, "..");
let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.close());

function start(env: Record<string, string>) {
  return Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: ROOT,
    // Any free port for the SFTP and SMTP servers: a fixed one would clash with another copy running beside it.
    env: { PATH: process.env.PATH ?? "", SFTP_PORT: "0", SMTP_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** The log line announcing the listening service; warnings logged at start (e.g. unconfigured notification channels) may come first. */
async function listeningLine(stream: ReadableStream<Uint8Array>): Promise<{ msg: string; url: string }> {
  const reader = stream.getReader();
  let text = "";
  try {
    for (;;) {
      const lines = text.split("\n");
      for (const l of lines.slice(0, -1)) {
        const parsed = JSON.parse(l);
        if (parsed.msg === "file pipeline service listening") return parsed;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error(`the service ended before listening; it wrote: ${text}`);
      text += new TextDecoder().decode(value);
    }
  } finally {
    reader.releaseLock();
  }
}

test("starts on the configured database, serves the API and stops on SIGTERM", async () => {
  const proc = start({ ...h.childEnv(), LOG_LEVEL: "info", PORT: "0", HOST: "127.0.0.1" });
  try {
    const line = await listeningLine(proc.stdout);
    expect(line.msg).toBe("file pipeline service listening");
    const base = line.url as string;
    const ws = await h.workspace();
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    const anonymous = await fetch(`${base}/connections`);
    expect(anonymous.status).toBe(401);
    const created = await fetch(`${base}/connections`, {
      method: "POST",
      headers: { "x-api-key": ws.apiKey, "content-type": "application/json", "service-version": "2026-05-25" },
      body: JSON.stringify({ name: "over the wire" }),
    });
    expect(created.status).toBe(200);
    expect(created.headers.get("service-version")).toBe("2026-05-25");
    // The running process and this test share the database.
    const seen = await h.api(ws, "GET", "/connections");
    expect(seen.body.map((c: { name: string }) => c.name)).toEqual(["over the wire"]);
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
});

test("the embedded default keeps its encryption key beside the data, readable by the owner only", async () => {
  const dataDir = `${h.dataDir}/embedded`;
  const proc = start({ DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" });
  try {
    await listeningLine(proc.stdout);
    expect(statSync(join(dataDir, "encryption.key")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, "service.db")).size).toBeGreaterThan(0);
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
});

test("a bad setting stops start-up with a message naming the variable", async () => {
  const proc = start({ DATA_DIR: `${h.dataDir}/bad`, PORT: "not-a-port" });
  expect(await proc.exited).toBe(1);
  expect(await new Response(proc.stderr).text()).toContain("PORT: must be a port number");
});
