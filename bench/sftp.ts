/**
 * A 1 GiB upload (and download) over the hosted SFTP server with the OpenSSH
 * `sftp` client, side by side in the same run with the same transfers to
 * OpenSSH's own sftp-server (a throwaway sshd with `internal-sftp` on
 * loopback), and the service's peak RSS.
 *
 *   bun bench/sftp.ts [MiB=1024] [rounds=2]
 *
 * Both servers get the same file, the same client, the same key login and
 * the same cipher per row; rounds alternate between them so that a noisy
 * neighbour hurts both alike, and the best round of each counts.
 */
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fmt, machine, peakRssMiB, startService, tempDir } from "./lib";

const MIB = 1024 * 1024;
const sizeMiB = Number(process.argv[2] ?? 1024);
const rounds = Number(process.argv[3] ?? 2);
/** OpenSSH's own choice against both servers (aes128-ctr + hmac-sha2-256-etm), and AES-GCM, which skips the separate MAC. */
const CIPHERS = ["default", "aes128-gcm@openssh.com"];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function run(argv: string[], opts: { cwd?: string } = {}): Promise<string> {
  const p = Bun.spawn(argv, { cwd: opts.cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${argv.join(" ")} failed (${code}): ${err || out}`);
  return out;
}

async function writeRandom(path: string, bytes: number): Promise<string> {
  const out = createWriteStream(path);
  const hash = createHash("sha256");
  for (let left = bytes; left > 0; ) {
    const chunk = randomBytes(Math.min(4 * MIB, left));
    hash.update(chunk);
    left -= chunk.length;
    if (!out.write(chunk)) await new Promise((r) => out.once("drain", r));
  }
  await new Promise<void>((r) => out.end(r));
  return hash.digest("hex");
}

async function sha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of Bun.file(path).stream()) hash.update(chunk);
  return hash.digest("hex");
}

const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const loadAtStart = loadavg();
const dir = tempDir("fps-bench-sftp-");
const file = join(dir, "upload.bin");
const bytes = sizeMiB * MIB;
console.log(`writing ${sizeMiB} MiB of random bytes...`);
const digest = await writeRandom(file, bytes);
await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(dir, "client_key")]);
const publicKey = readFileSync(join(dir, "client_key.pub"), "utf8").trim();

// ---- OpenSSH's sftp-server: a throwaway sshd on loopback --------------------
const sshdDir = join(dir, "sshd");
mkdirSync(sshdDir);
await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(sshdDir, "host_key")]);
writeFileSync(join(sshdDir, "authorized_keys"), `${publicKey}\n`);
const sshdPort = await freePort();
const user = (await run(["id", "-un"])).trim();
writeFileSync(
  join(sshdDir, "sshd_config"),
  [
    `Port ${sshdPort}`,
    "ListenAddress 127.0.0.1",
    `HostKey ${join(sshdDir, "host_key")}`,
    `AuthorizedKeysFile ${join(sshdDir, "authorized_keys")}`,
    `PidFile ${join(sshdDir, "sshd.pid")}`,
    "StrictModes no",
    "UsePAM no",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PermitRootLogin prohibit-password",
    `AllowUsers ${user}`,
    "Subsystem sftp internal-sftp",
    "",
  ].join("\n"),
);
mkdirSync("/run/sshd", { recursive: true });
await run(["/usr/sbin/sshd", "-t", "-f", join(sshdDir, "sshd_config")]);
const sshd = Bun.spawn(["/usr/sbin/sshd", "-D", "-e", "-f", join(sshdDir, "sshd_config")], { stdout: "ignore", stderr: "pipe" });
const opensshTarget = join(dir, "openssh-target");
mkdirSync(opensshTarget);

// ---- the service: its own process, embedded default --------------------------
const sftpPort = await freePort();
const svc = await startService({ SFTP_PORT: String(sftpPort), SMTP_PORT: "0" });
const conn = await svc.api("POST", "/connections", { name: "Bench partner", type: "SFTP", useHostedSFTP: true, sftpUsername: "bench-partner", awsPublicKey: publicKey });
const startRss = peakRssMiB(svc.pid);

// Both servers listening before the first transfer.
for (let i = 0; i < 100; i++) {
  try {
    await run(["ssh-keyscan", "-p", String(sshdPort), "127.0.0.1"]);
    break;
  } catch {
    await Bun.sleep(100);
  }
}

function sftpArgv(port: number, login: string, cipher: string, batch: string): string[] {
  return [
    "sftp",
    "-q",
    "-i", join(dir, "client_key"),
    "-o", "IdentitiesOnly=yes",
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "LogLevel=ERROR",
    ...(cipher === "default" ? [] : ["-c", cipher]),
    "-P", String(port),
    "-b", batch,
    `${login}@127.0.0.1`,
  ];
}

async function transfer(target: "service" | "openssh", cipher: string, direction: "put" | "get"): Promise<number> {
  const batch = join(dir, "batch");
  const remote = target === "service" ? "/inbound/upload.bin" : join(opensshTarget, "upload.bin");
  const local = join(dir, "download.bin");
  writeFileSync(batch, direction === "put" ? `put ${file} ${remote}\n` : `get ${remote} ${local}\n`);
  const argv = target === "service" ? sftpArgv(sftpPort, "bench-partner", cipher, batch) : sftpArgv(sshdPort, user, cipher, batch);
  const started = performance.now();
  await run(argv);
  const seconds = (performance.now() - started) / 1000;
  if (direction === "get") {
    if (statSync(local).size !== bytes || (await sha256(local)) !== digest) throw new Error(`${target} ${direction}: the file came back different`);
    rmSync(local);
  }
  return seconds;
}

type Row = { cipher: string; direction: "put" | "get"; service: number[]; openssh: number[] };
const results: Row[] = [];
let peak = 0;
try {
  for (const cipher of CIPHERS) {
    for (const direction of ["put", "get"] as const) {
      const row: Row = { cipher, direction, service: [], openssh: [] };
      for (let r = 0; r < rounds; r++) {
        // Alternate which goes first, so neither always meets a warm or a busy machine.
        const order = r % 2 === 0 ? (["openssh", "service"] as const) : (["service", "openssh"] as const);
        for (const target of order) {
          const s = await transfer(target, cipher, direction);
          row[target].push(s);
          console.log(`${direction} ${cipher} ${target}: ${s.toFixed(2)} s, ${fmt(sizeMiB / s)} MiB/s`);
        }
      }
      results.push(row);
    }
  }
  // The stored object is the file as sent.
  const stat = statSync(join(svc.env.DATA_DIR!, "objects", "ws", conn.workspaceId, "spaces", conn.id, "inbound", "upload.bin"));
  if (stat.size !== bytes) throw new Error("the service stored a different size");
} finally {
  peak = peakRssMiB(svc.pid);
  await svc.stop();
  sshd.kill("SIGTERM");
  await sshd.exited;
}

const best = (xs: number[]) => Math.min(...xs);
const rows = results.map((r) => {
  const s = best(r.service);
  const o = best(r.openssh);
  return [
    r.direction === "put" ? "upload (put)" : "download (get)",
    r.cipher === "default" ? "negotiated (aes128-ctr, hmac-sha2-256-etm)" : r.cipher,
    `${fmt(sizeMiB / o)} MiB/s (${o.toFixed(2)} s)`,
    `${fmt(sizeMiB / s)} MiB/s (${s.toFixed(2)} s)`,
    `${(o / s).toFixed(2)}x`,
  ];
});
const md = `# Hosted SFTP benchmark (issue 8)

Machine: ${machine()}. Measured ${new Date().toISOString().slice(0, 10)} by \`bun bench/sftp.ts ${sizeMiB} ${rounds}\`, every number in one run.
Load average (1, 5, 15 min) at the start: ${loadAtStart}; at the end: ${loadavg()} (other work on the machine slows
both servers alike; the rounds alternate between them).

Transfer: one ${fmt(sizeMiB)} MiB file of random bytes, OpenSSH \`sftp\` client (${Bun.spawnSync(["ssh", "-V"]).stderr.toString().trim()}, default request size and
queue), public-key login, loopback. Baseline: OpenSSH's own \`internal-sftp\` in a throwaway \`sshd\` (same
machine, same disk, writing to a plain folder). The service: \`src/main.ts\` as its own process (SQLite, local
object store under DATA_DIR, \`LOG_LEVEL=warn\`), uploading into a hosted connection's \`/inbound\` (streamed to
the store, atomic rename on close, arrival recorded). Best of ${rounds} alternating rounds per cell; the
downloaded file is checked byte for byte.

| transfer | cipher | OpenSSH sftp-server | hosted SFTP (service) | service / OpenSSH |
| --- | --- | --- | --- | --- |
${rows.map((r) => `| ${r.join(" | ")} |`).join("\n")}

Service peak RSS (VmHWM over the whole run, start-up included): **${peak} MiB** (${startRss} MiB after start-up, before
the first transfer). Targets: upload at least 0.5x OpenSSH, RSS under 300 MiB.

All rounds (seconds): ${results.map((r) => `${r.direction}/${r.cipher}: service ${r.service.map((s) => s.toFixed(2)).join(", ")}; OpenSSH ${r.openssh.map((s) => s.toFixed(2)).join(", ")}`).join(". ")}.
`;
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
writeFileSync(join(import.meta.dir, "results", "sftp.md"), md);
console.log(md);
rmSync(dir, { recursive: true, force: true });
