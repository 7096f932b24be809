import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Client, type SFTPWrapper } from "ssh2";
import { listArrivalRows } from "../src/services/arrivals/list-arrivals";
import { spaceKey } from "../src/services/spaces";
import { Harness, type TestWorkspace } from "./helpers/harness";
import { createPipeline } from "./helpers/runs";
import { scanHostKey, sftpBatch, sshKeyPair } from "./helpers/sftp";

/**
 * The hosted SFTP server as part of the running service (`src/main.ts`):
 * it starts on SFTP_PORT with the HTTP server, keeps one host key across
 * restarts (generated in DATA_DIR, or given by SFTP_HOST_KEY), and stops
 * with the service, aborting uploads that were not finished.
 */
const ROOT = join(import.meta.dir, "..");
// Each test drives real OpenSSH processes (and some start the service): more than the 5 s default.
setDefaultTimeout(60_000);
let h: Harness;
let ws: TestWorkspace;
const PASSWORD = "lifecycle-password-1";

beforeAll(async () => {
  h = await Harness.start();
  ws = await h.workspace();
  await h.ok(ws, "POST", "/connections", { name: "Life partner", type: "SFTP", sftpUsername: "life-partner", sftpPassword: PASSWORD });
});
afterAll(() => h.close());

async function startService(env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...h.childEnv(), LOG_LEVEL: "info", PORT: "0", HOST: "127.0.0.1", SFTP_PORT: "0", SMTP_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("file pipeline service listening")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the service did not start: ${await new Response(proc.stderr).text()}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  const line = JSON.parse(text.split("\n").find((l) => l.includes("file pipeline service listening"))!);
  return { proc, sftpPort: line.sftpPort as number, fingerprint: line.sftpHostKey as string };
}

const fingerprintOf = (publicKey: string) => `SHA256:${createHash("sha256").update(Buffer.from(publicKey.split(" ")[1]!, "base64")).digest("base64").replace(/=+$/, "")}`;

test("the host key is generated on first start, kept in DATA_DIR (owner-only), and the same after a restart", async () => {
  const keyFile = join(h.dataDir, "sftp_host_ed25519_key");
  expect(existsSync(keyFile)).toBe(false);

  const first = await startService();
  let firstKey: string;
  try {
    expect(first.sftpPort).toBeGreaterThan(0);
    firstKey = await scanHostKey(first.sftpPort);
    expect(fingerprintOf(firstKey)).toBe(first.fingerprint);
    // The service answers SFTP logins while it runs.
    const r = await sftpBatch({ port: first.sftpPort, user: "life-partner", password: PASSWORD }, ["ls -1"]);
    expect(r.stdout).toContain("inbound\noutbound\n");
  } finally {
    first.proc.kill("SIGTERM");
  }
  expect(await first.proc.exited).toBe(0);
  expect(statSync(keyFile).mode & 0o777).toBe(0o600);
  expect(readFileSync(`${keyFile}.pub`, "utf8")).toStartWith(firstKey!);

  const second = await startService();
  try {
    expect(await scanHostKey(second.sftpPort)).toBe(firstKey!);
    expect(second.fingerprint).toBe(first.fingerprint);
  } finally {
    second.proc.kill("SIGTERM");
  }
  expect(await second.proc.exited).toBe(0);
});

test("SFTP_HOST_KEY gives the key: a path to an OpenSSH key made by ssh-keygen, or the key itself", async () => {
  const { privateKeyFile, publicKey } = await sshKeyPair("host");
  const byPath = await startService({ SFTP_HOST_KEY: privateKeyFile });
  try {
    expect(await scanHostKey(byPath.sftpPort)).toBe(publicKey.split(" ").slice(0, 2).join(" "));
  } finally {
    byPath.proc.kill("SIGTERM");
  }
  expect(await byPath.proc.exited).toBe(0);

  const inline = await startService({ SFTP_HOST_KEY: readFileSync(privateKeyFile, "utf8") });
  try {
    expect(inline.fingerprint).toBe(fingerprintOf(publicKey));
  } finally {
    inline.proc.kill("SIGTERM");
  }
  expect(await inline.proc.exited).toBe(0);
});

test("a host key that cannot be read, or a port in use, stops start-up with a message", async () => {
  const bad = Bun.spawn([process.execPath, "src/main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...h.childEnv(), PORT: "0", HOST: "127.0.0.1", SFTP_PORT: "0", SMTP_PORT: "0", SFTP_HOST_KEY: "/nonexistent/host_key" },
    stderr: "pipe",
    stdout: "ignore",
  });
  expect(await bad.exited).toBe(1);
  expect(await new Response(bad.stderr).text()).toContain("SFTP_HOST_KEY: cannot read '/nonexistent/host_key'");

  const taken = await h.service.sftp.listen(0, "127.0.0.1");
  try {
    const clash = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...h.childEnv(), PORT: "0", HOST: "127.0.0.1", SFTP_PORT: String(taken), SMTP_PORT: "0" },
      stderr: "pipe",
      stdout: "ignore",
    });
    expect(await clash.exited).toBe(1);
    expect(await new Response(clash.stderr).text()).toContain(`the hosted SFTP server could not start on 127.0.0.1:${taken} (SFTP_PORT)`);
  } finally {
    await h.service.sftp.close();
  }
});

test("stopping the service ends sessions and aborts unfinished uploads: nothing stored, nothing started", async () => {
  const partner = await h.ok(ws, "GET", "/connections").then((list: { id: string; name: string }[]) => list.find((c) => c.name === "Life partner")!);
  await createPipeline(h, ws, { connectionId: partner.id });
  const port = await h.service.sftp.listen(0, "127.0.0.1");
  const client = new Client();
  await new Promise<void>((resolve, reject) => {
    client.once("ready", () => resolve()).once("error", reject);
    client.connect({ host: "127.0.0.1", port, username: "life-partner", password: PASSWORD });
  });
  const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
  const sftp = await new Promise<SFTPWrapper>((resolve, reject) => client.sftp((err, s) => (err ? reject(err) : resolve(s))));
  const handle = await new Promise<Buffer>((resolve, reject) => sftp.open("/inbound/unfinished.csv", "w", (err, hd) => (err ? reject(err) : resolve(hd))));
  await new Promise<void>((resolve, reject) => sftp.write(handle, Buffer.from("SKU,Qty\nA,1\n"), 0, 12, 0, (err) => (err ? reject(err) : resolve())));

  await h.service.sftp.close();
  await closed;
  expect(h.service.sftp.port).toBeNull();
  expect(await h.svc.storage.stat(spaceKey(ws.workspaceId, partner.id, "inbound/unfinished.csv"))).toBeNull();
  await Bun.sleep(300);
  expect((await listArrivalRows(h.svc, { workspaceId: ws.workspaceId, connectionId: partner.id, limit: 10, offset: 0 })).total).toBe(0);
  // And the port is free again.
  await expect(fetch(`http://127.0.0.1:${port}`).catch((e) => e.code)).resolves.toBe("ECONNREFUSED");
});
