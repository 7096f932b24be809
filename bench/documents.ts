/**
 * Documents: a 1 GiB object uploaded (multipart, 128 presigned part PUTs,
 * then completion) and downloaded (one presigned GET) through the running
 * service on the local store, beside `cp` of the same file on the same disk
 * in the same run, with the service's resident memory sampled throughout.
 *
 *   bun bench/documents.ts [sizeMiB=1024] [concurrency=2]
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fmt, machine, peakRssMiB, QUIET_SERVERS, ROOT, startService, table, tempDir } from "./lib";

const MiB = 1024 * 1024;
const sizeMiB = Number(process.argv[2] ?? 1024);
const concurrency = Number(process.argv[3] ?? 2);
const size = sizeMiB * MiB;

function rssMiB(pid: number): number {
  try {
    const kb = Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+) kB/)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

/** Samples the service's RSS every 20 ms while `fn` runs; answers fn's seconds and the highest sample. */
async function measured<T>(pid: number, fn: () => Promise<T>): Promise<{ seconds: number; peakMiB: number; value: T }> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid));
  }, 20);
  const t0 = performance.now();
  try {
    const value = await fn();
    return { seconds: (performance.now() - t0) / 1000, peakMiB: Math.max(peak, rssMiB(pid)), value };
  } finally {
    clearInterval(timer);
  }
}

function run(cmd: string[]): void {
  const p = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${p.stderr.toString()}`);
}

async function timed(fn: () => void | Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

// Other listeners on port 0, so the run does not clash with anything else on the machine.
const svc = await startService(QUIET_SERVERS);
const work = tempDir("fps-bench-docs-");
try {
  const source = join(work, "source.bin");
  console.log(`generating ${sizeMiB} MiB of random bytes`);
  run(["dd", "if=/dev/urandom", `of=${source}`, "bs=1M", `count=${sizeMiB}`, "status=none"]);
  run(["sync"]);
  const load = loadavg().map((n) => n.toFixed(2)).join(" ");
  const idleRss = rssMiB(svc.pid);

  // Baseline: cp of the same file on the same disk (the service's DATA_DIR is on it too), and cp followed by fsync.
  const cpSeconds = await timed(() => run(["cp", source, join(work, "cp-1.bin")]));
  const cpSyncSeconds = await timed(() => {
    run(["cp", source, join(work, "cp-2.bin")]);
    run(["sync", "-f", join(work, "cp-2.bin")]);
  });
  rmSync(join(work, "cp-1.bin"));
  rmSync(join(work, "cp-2.bin"));

  const conn = await svc.api("POST", "/connections", { name: "Bench documents", type: "SFTP", useHostedSFTP: true });

  // Upload: ticket, parts (a few in flight), completion.
  const up = await measured(svc.pid, async () => {
    const t0 = performance.now();
    const ticket = await svc.api("POST", "/documents/upload-url", { connectionId: conn.id, path: "bench", filename: "big.bin", size, contentType: "application/octet-stream" });
    if (ticket.mode !== "multipart") throw new Error(`expected a multipart ticket, got ${ticket.mode}`);
    const parts: { partNumber: number; url: string }[] = ticket.parts;
    const etags: string[] = new Array(parts.length);
    let next = 0;
    const file = Bun.file(source);
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= parts.length) return;
        const start = i * ticket.partSize;
        const res = await fetch(parts[i]!.url, { method: "PUT", body: file.slice(start, Math.min(size, start + ticket.partSize)) });
        if (res.status !== 200) throw new Error(`part ${i + 1}: ${res.status} ${await res.text()}`);
        etags[i] = res.headers.get("etag")!;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const partsSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    const done = await svc.api("POST", "/documents/upload-complete", {
      connectionId: conn.id,
      path: ticket.path,
      uploadId: ticket.uploadId,
      parts: parts.map((p, i) => ({ partNumber: p.partNumber, etag: etags[i] })),
    });
    if (done.size !== size) throw new Error(`completed ${done.size} bytes, expected ${size}`);
    return { parts: parts.length, partSize: ticket.partSize as number, partsSeconds, completeSeconds: (performance.now() - t1) / 1000 };
  });

  // Download: one presigned GET, streamed to disk by curl.
  const target = join(work, "downloaded.bin");
  const down = await measured(svc.pid, async () => {
    const link = await svc.api("GET", `/documents/download-url?connectionId=${conn.id}&path=bench/big.bin`);
    const p = Bun.spawn(["curl", "-sS", "--fail", "-o", target, link.url], { stdout: "pipe", stderr: "pipe" });
    if ((await p.exited) !== 0) throw new Error(`curl: ${await new Response(p.stderr).text()}`);
  });
  if (statSync(target).size !== size) throw new Error("downloaded size differs");
  run(["cmp", source, target]);

  const hwm = peakRssMiB(svc.pid);
  const mbps = (s: number) => fmt(size / MiB / s);
  const rows: (string | number)[][] = [
    ["`cp` (same file, same disk)", cpSeconds.toFixed(2), mbps(cpSeconds), "-"],
    ["`cp` + `sync -f` (durable, as the store is)", cpSyncSeconds.toFixed(2), mbps(cpSyncSeconds), "-"],
    [
      `upload: ${up.value.parts} presigned part PUTs of ${up.value.partSize / MiB} MiB (${concurrency} in flight) + complete`,
      up.seconds.toFixed(2),
      mbps(up.seconds),
      fmt(up.peakMiB),
    ],
    ["  of which the part PUTs", up.value.partsSeconds.toFixed(2), mbps(up.value.partsSeconds), ""],
    ["  of which completion (parts joined into the object)", up.value.completeSeconds.toFixed(2), mbps(up.value.completeSeconds), ""],
    ["download: one presigned GET (curl to disk)", down.seconds.toFixed(2), mbps(down.seconds), fmt(down.peakMiB)],
  ];
  const text = `# Documents: 1 GiB through presigned links (local store)

Machine: ${machine()}. Load average at start: ${load} (the machine is shared).
Run: \`bun bench/documents.ts ${sizeMiB} ${concurrency}\`, ${new Date().toISOString().slice(0, 10)}.

The service runs as its own process (SQLite, local store under its DATA_DIR
on the same file system as the source file); the client uploads the
${sizeMiB} MiB file of random bytes with \`fetch\` (a file slice per part) and
downloads it with \`curl\`; the download is compared byte for byte. The
service's RSS is sampled every 20 ms (VmRSS) and its high-water mark
(VmHWM) read at the end.

${table(["step", "seconds", "MiB/s", "service peak RSS (MiB, sampled)"], rows)}

- Service RSS: ${fmt(idleRss)} MiB idle after start, **${fmt(hwm)} MiB high-water mark (VmHWM) over the whole run** (target < 200 MiB).
`;
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  writeFileSync(join(ROOT, "bench", "results", "documents.md"), text);
  console.log(text);
} finally {
  await svc.stop();
  rmSync(work, { recursive: true, force: true });
}
