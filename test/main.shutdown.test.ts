import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, type SFTPWrapper } from "ssh2";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline, ITEMS_CSV, waitForRun } from "./helpers/runs";
import { startS3 } from "./helpers/s3";
import { sftpLive } from "./helpers/sftp";

/**
 * Graceful shutdown of the real process: `npm start` hands SIGTERM to the service, which stops taking
 * connections, finishes the requests in flight, and exits within SHUTDOWN_TIMEOUT_SECONDS with its ports free.
 * The harness here claims no jobs: only the child processes run them.
 */
const ROOT = join(import.meta.dir, "..");
let h: Harness;
let ws: TestWorkspace;
let pipelineId: string;
beforeAll(async () => {
  h = await Harness.start({ startJobs: false });
  ws = await h.workspace();
  pipelineId = (await createPipeline(h, ws)).pipeline.id;
});
afterAll(() => h.close());

type Proc = ReturnType<typeof Bun.spawn>;
const env = () => ({ PATH: process.env.PATH ?? "", ...h.childEnv(), LOG_LEVEL: "info", PORT: "0", HOST: "127.0.0.1", SFTP_PORT: "0", SMTP_PORT: "0", SHUTDOWN_TIMEOUT_SECONDS: "10" });

/** The JSON log lines of a process as they come (npm's own banner lines are skipped). */
function logLines(proc: Proc) {
  const lines: Record<string, any>[] = [];
  const done = (async () => {
    let text = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      text += new TextDecoder().decode(chunk);
      const parts = text.split("\n");
      text = parts.pop() ?? "";
      for (const l of parts) if (l.startsWith("{")) lines.push(JSON.parse(l));
    }
  })();
  return {
    lines,
    done,
    async waitFor(msg: string, timeoutMs = 30_000): Promise<Record<string, any>> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const found = lines.find((l) => l.msg === msg);
        if (found) return found;
        await Bun.sleep(25);
      }
      throw new Error(`no '${msg}' log line; seen: ${JSON.stringify(lines)}`);
    },
  };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Binding the port again succeeds only once the service has let go of it. */
function portIsFree(port: number): boolean {
  try {
    Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
    return true;
  } catch {
    return false;
  }
}

test("npm start passes SIGTERM to the service: it stops gracefully and frees its ports", async () => {
  const npm = Bun.spawn(["npm", "start", "--silent"], { cwd: ROOT, env: env(), stdout: "pipe", stderr: "pipe" });
  const log = logLines(npm);
  try {
    const listening = await log.waitFor("file pipeline service listening");
    expect(listening.pid).not.toBe(npm.pid);
    const port = Number(new URL(listening.url).port);
    expect((await fetch(`${listening.url}/healthz`)).status).toBe(200);
    npm.kill("SIGTERM");
    await npm.exited;
    await log.done;
    expect(log.lines.map((l) => l.msg)).toContain("stopped");
    // The service itself is gone, not left running under another parent, and its ports are free.
    const deadline = Date.now() + 5000;
    while (alive(listening.pid) && Date.now() < deadline) await Bun.sleep(50);
    expect(alive(listening.pid)).toBe(false);
    expect(portIsFree(port)).toBe(true);
    expect(portIsFree(listening.sftpPort)).toBe(true);
  } finally {
    npm.kill("SIGKILL");
  }
});

test("an upload in flight at SIGTERM is finished and acknowledged; new connections are refused; the run completes after a restart", async () => {
  const first = Bun.spawn([process.execPath, "src/main.ts"], { cwd: ROOT, env: env(), stdout: "pipe", stderr: "pipe" });
  const log = logLines(first);
  let second: Proc | undefined;
  try {
    const { url } = await log.waitFor("file pipeline service listening");
    // A multipart upload whose body arrives in two pieces, the signal in between.
    const boundary = "----fps-shutdown-test";
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="items.csv"\r\ncontent-type: text/csv\r\n\r\n`;
    const half = Math.floor(ITEMS_CSV.length / 2);
    let finish!: () => void;
    const rest = new Promise<void>((r) => (finish = r));
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new TextEncoder().encode(head + ITEMS_CSV.slice(0, half)));
        await rest;
        c.enqueue(new TextEncoder().encode(`${ITEMS_CSV.slice(half)}\r\n--${boundary}--\r\n`));
        c.close();
      },
    });
    const upload = fetch(`${url}/pipelines/${pipelineId}/runs`, {
      method: "POST",
      headers: { "x-api-key": ws.apiKey, "service-version": "2026-05-25", "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    await Bun.sleep(500);
    const signalled = Date.now();
    first.kill("SIGTERM");
    await log.waitFor("shutting down");
    // The listener is closed: a new connection gets nowhere, while the upload's own connection stays open.
    const refused = await fetch(`${url}/healthz`).then(
      () => false,
      () => true,
    );
    expect(refused).toBe(true);
    finish();
    const res = await upload;
    const run = await res.json();
    expect(res.status, JSON.stringify(run)).toBe(200);
    expect(run.id).toStartWith("run_");
    expect(await first.exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);

    // Whatever the first process did not get to is waiting in the queue for the next one.
    second = Bun.spawn([process.execPath, "src/main.ts"], { cwd: ROOT, env: env(), stdout: "pipe", stderr: "pipe" });
    await logLines(second).waitFor("file pipeline service listening");
    const done = await waitForRun(h, ws, run.id, ["completed", "failed"], { timeoutMs: 30_000 });
    expect(done.status).toBe("completed");
    expect(done.metadata).toMatchObject({ source: expect.any(String) });
  } finally {
    first.kill("SIGKILL");
    if (second) {
      second.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    }
  }
});

test("an open subscription does not hold the stop: the stream is closed once nothing else is in flight", async () => {
  const proc = Bun.spawn([process.execPath, "src/main.ts"], { cwd: ROOT, env: { ...env(), SHUTDOWN_TIMEOUT_SECONDS: "20" }, stdout: "pipe", stderr: "pipe" });
  const log = logLines(proc);
  try {
    const { url } = await log.waitFor("file pipeline service listening");
    const res = await fetch(`${url}/trpc/runs.onUpdate`, { headers: { "x-api-key": ws.apiKey, accept: "text/event-stream" } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("connected");
    const signalled = Date.now();
    proc.kill("SIGTERM");
    // The stream ends (cut by the server) and the process exits long before half of the 20 s.
    while (!(await reader.read().catch(() => ({ done: true }))).done) {}
    expect(await proc.exited).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(8000);
    expect(log.lines.map((l) => l.msg)).not.toContain("HTTP requests still open at half the shutdown time; closing them");
  } finally {
    proc.kill("SIGKILL");
  }
});

/**
 * An S3 store (s3rver) reached through a pass-through HTTP proxy that can hold back the PUT of one key: the file's
 * close then waits on storage, as it would on a slow store. `arrived` settles when the held PUT has arrived whole.
 */
async function slowS3(heldKey: string) {
  const s3 = await startS3();
  let seen!: () => void;
  let release!: () => void;
  const arrived = new Promise<void>((r) => (seen = r));
  const released = new Promise<void>((r) => (release = r));
  const proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      if (req.method === "PUT" && url.pathname.endsWith(`/${heldKey}`)) {
        seen();
        await released;
      }
      const headers = new Headers(req.headers);
      for (const h of ["host", "content-length", "transfer-encoding", "connection"]) headers.delete(h);
      const res = await fetch(`${s3.endpoint}${url.pathname}${url.search}`, { method: req.method, headers, body, redirect: "manual" });
      return new Response(req.method === "HEAD" ? null : await res.arrayBuffer(), { status: res.status, headers: res.headers });
    },
  });
  return {
    env: { ...s3.env, S3_ENDPOINT: `http://127.0.0.1:${proxy.port}` },
    arrived,
    release,
    async stop() {
      release();
      proxy.stop(true);
      await s3.stop();
    },
  };
}

test("an SFTP upload whose close is being answered at SIGTERM is acknowledged and runs once; a file opened after the signal is refused", async () => {
  const user = "stopping-partner";
  const password = "stopping-partner-Pw-7";
  const partner = await h.ok(ws, "POST", "/connections", { name: "Stopping partner", type: "SFTP", sftpUsername: user, sftpPassword: password });
  const { pipeline } = await createPipeline(h, ws, { connectionId: partner.id });
  const dir = mkdtempSync(join(tmpdir(), "fps-sftp-stop-"));
  writeFileSync(join(dir, "items.csv"), ITEMS_CSV);
  const store = await slowS3("closing.csv");
  const childEnv = { ...env(), ...store.env };

  const first = Bun.spawn([process.execPath, "src/main.ts"], { cwd: ROOT, env: childEnv, stdout: "pipe", stderr: "pipe" });
  const log = logLines(first);
  let second: Proc | undefined;
  const late = new Client();
  let uploader: ReturnType<typeof sftpLive> | undefined;
  try {
    const { sftpPort } = await log.waitFor("file pipeline service listening");
    // Two partners logged in before the signal: one uploads, the other opens a file only after it.
    uploader = sftpLive({ port: sftpPort, user, password }, { cwd: dir });
    uploader.send("ls /inbound");
    await uploader.waitFor("sftp> ls /inbound");
    await new Promise<void>((resolve, reject) => {
      late.once("ready", () => resolve()).once("error", reject);
      late.connect({ host: "127.0.0.1", port: sftpPort, username: user, password });
    });
    const lateSftp = await new Promise<SFTPWrapper>((resolve, reject) => late.sftp((err, s) => (err ? reject(err) : resolve(s))));

    // The client has sent the whole file and its close; the store is still writing it when the signal comes.
    uploader.send("put items.csv /inbound/closing.csv");
    uploader.send("bye");
    await store.arrived;
    first.kill("SIGTERM");
    await log.waitFor("shutting down");
    const refused = await new Promise<Error | null>((resolve) => lateSftp.open("/inbound/late.csv", "w", (err) => resolve(err ?? null)));
    expect(refused?.message).toContain("the server is stopping");
    await Bun.sleep(300);
    store.release();

    // The client is told its file was stored; the process still ends in time.
    const done = await uploader.end();
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toBe("");
    expect(await first.exited).toBe(0);
    expect(log.lines.map((l) => l.msg)).not.toContain("shutdown timed out; exiting with work unfinished");

    // The next instance starts the one run of the stored file; the refused one stored nothing.
    second = Bun.spawn([process.execPath, "src/main.ts"], { cwd: ROOT, env: childEnv, stdout: "pipe", stderr: "pipe" });
    await logLines(second).waitFor("file pipeline service listening");
    const deadline = Date.now() + 30_000;
    let runs: { filename: string; id: string }[] = [];
    while (runs.length === 0 && Date.now() < deadline) {
      runs = (await h.ok(ws, "GET", `/pipeline-runs?pipelineId=${pipeline.id}&limit=100`)).data;
      await Bun.sleep(100);
    }
    expect(runs.map((r) => r.filename)).toEqual(["closing.csv"]);
    expect((await waitForRun(h, ws, runs[0]!.id, ["completed", "failed"], { timeoutMs: 30_000 })).status).toBe("completed");
  } finally {
    uploader?.kill();
    late.end();
    first.kill("SIGKILL");
    if (second) {
      second.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    }
    await store.stop();
  }
});
