/**
 * Fault scenarios of SFTP, run by bench/faults.ts: SIGTERM while partners'
 * uploads into the hosted inbound folder are in flight (the real OpenSSH
 * `sftp` client), and kill -9 while runs are being delivered to a customer's
 * own SFTP server (a throwaway OpenSSH sshd, test/helpers/sshd.ts).
 */
import { readdirSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startSshd } from "../test/helpers/sshd";
import { sftpBatch } from "../test/helpers/sftp";
import { client, COLUMNS_SCHEMA, csv, duplicatedRuns, Instance, listRuns, type Row, secs, setup, sleep } from "./faults-lib";
import { COLUMNS, tempDir } from "./lib";

const PASSWORD = "faults-partner-Pw-4k9q";

/**
 * `workers` OpenSSH clients put files of 50,000 rows into /inbound, one
 * connection per file, one after the other; SIGTERM after 3 s (no upload
 * starts after it, so at most `workers` are in flight); then a new
 * instance. An upload the client saw succeed must become a completed run of
 * the whole file; an upload cut by the stop may store nothing, or (when only
 * the answer to its close was lost) a run of the whole file; never a part.
 */
export async function sigtermSftp(dialect: "sqlite" | "pg", workers = 6): Promise<Row> {
  const user = `faults-${Math.random().toString(36).slice(2, 8)}`;
  const s = await setup(dialect, { env: { SFTP_PORT: "free" }, connection: { sftpUsername: user, sftpPassword: PASSWORD } });
  const dir = tempDir("fps-faults-sftp-");
  const body = csv(50_000);
  writeFileSync(join(dir, "rows.csv"), body);
  const a = await Instance.start(s.env);
  const accepted = new Set<string>();
  const cutErrors = new Map<string, string>(); // what the client said of an upload it saw fail
  let tried = 0;
  let going = true;
  let n = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (going) {
      const name = `sftp-${n++}.csv`;
      tried++;
      const r = await sftpBatch({ port: a.sftpPort, user, password: PASSWORD }, [`put rows.csv /inbound/${name}`], { cwd: dir, timeoutMs: 60_000 });
      if (r.code === 0) accepted.add(name);
      else cutErrors.set(name, r.stderr.trim().replace(/\s+/g, " "));
    }
  });
  await sleep(3_000);
  // No new upload after the signal: those in flight are the ones the stop meets.
  going = false;
  const s0 = performance.now();
  await a.stop();
  const stopMs = performance.now() - s0;
  await Promise.all(loops);
  const t0 = performance.now();
  const b = await Instance.start(s.env);
  const end = Date.now() + 180_000;
  let runs: any[] = [];
  for (;;) {
    runs = await listRuns(b.url, s.key, s.pipelineId);
    const done = [...accepted].every((name) => runs.some((r) => r.filename === name && r.status === "completed"));
    const ready = (await fetch(`${b.url}/readyz`).catch(() => null))?.status === 200;
    if ((done && ready) || Date.now() > end) break;
    await sleep(100);
  }
  const at = performance.now();
  // A short file stored as if whole would be worse than a lost one: every run must carry the whole file.
  const partial = runs.filter((r) => r.size !== body.length).length;
  await b.stop();
  await s.drop();
  const lost = [...accepted].filter((name) => !runs.some((r) => r.filename === name && r.status === "completed")).length;
  const duplicated = duplicatedRuns(runs);
  const cutStored = runs.filter((r) => !accepted.has(r.filename)).length;
  for (const [name, err] of cutErrors) console.error(`${dialect} ${name}: ${runs.some((r) => r.filename === name) ? "stored" : "not stored"}; the client said: ${err}`);
  return [
    `SIGTERM with SFTP uploads in flight (${dialect}; ${workers} clients, stopped in ${secs(stopMs)}; ${tried - accepted.size} cut, of which ${cutStored} stored whole, ${partial} runs partial)`,
    tried,
    lost,
    duplicated,
    0,
    0,
    secs(at - t0),
    `${Math.max(a.peakMiB, b.peakMiB)} MiB`,
  ];
}

/**
 * 20 outbound runs of 20,000 rows for a customer's own SFTP server (sshd);
 * once all are in, kill -9 as soon as the next delivery's temporary file
 * appears there, then a new instance. Every run must end delivered with its whole file in
 * the customer's outbound folder. Deliveries are counted from the folder's
 * renames onto the final names (inotify): a file delivered twice counts once
 * in `duplicated` (the second copy replaces the first, as an overwrite).
 */
export async function killDuringSftpDelivery(dialect: "sqlite" | "pg"): Promise<Row> {
  const sshd = await startSshd();
  const outbound = sshd.mkdir("customer/outbound");
  sshd.mkdir("customer/inbound");
  const s = await setup(dialect, { env: { MAX_JSON_BODY_BYTES: String(16 * 1024 * 1024) } });
  let a = await Instance.start(s.env);
  let api = client(a.url, s.key);
  const conn = await api.json("POST", "/connections", {
    name: "Customer box",
    type: "SFTP",
    useHostedSFTP: false,
    sftpUsername: sshd.user,
    sftpPrivateKey: sshd.privateKey,
    sftpServer: { host: sshd.host, port: sshd.port, rootDirectory: join(sshd.root, "customer"), inboundFolder: "/inbound", outboundFolder: "/outbound" },
  });
  const schema = await api.json("POST", "/schemas", { name: "Rows out", definition: COLUMNS_SCHEMA });
  const pipeline = await api.json("POST", "/pipelines", {
    name: "Faults out",
    clientId: conn.id,
    schemaId: schema.id,
    direction: "outbound",
    isActive: true,
    mappings: { fieldMappings: COLUMNS.map((c) => ({ source: c, target: c })) },
  });

  const deliveries = new Map<string, number>();
  let tempSeen = false;
  const watcher = watch(outbound, (_event, file) => {
    if (!file) return;
    if (file.endsWith(".part")) tempSeen = true;
    else deliveries.set(file, (deliveries.get(file) ?? 0) + 1);
  });
  const rows = Array.from({ length: 20_000 }, (_, i) => Object.fromEntries(COLUMNS.map((c) => [c, `${c}-${i}`])));
  const runIds = new Map<string, string>(); // run id -> file name
  let other5xx = 0;
  for (let i = 0; i < 20; i++) {
    const name = `out-${i}.csv`;
    const up = await api.json("POST", "/outbound/uploads", { connectionName: conn.name, pipelineName: pipeline.name, totalParts: 1, outputFilename: name });
    await api.json("PUT", `/outbound/uploads/${up.uploadId}/parts/1`, rows);
    const done = await api.json("POST", `/outbound/uploads/${up.uploadId}/complete`, { parts: [{ partNumber: 1 }] }).catch((e: Error) => {
      if (/: 5\d\d /.test(e.message)) other5xx++;
      return null;
    });
    if (done?.runId) runIds.set(done.runId, name);
  }
  // The next delivery to begin once every run is in: killed with its temporary file half written.
  tempSeen = false;
  for (let t = 0; !tempSeen && t < 6_000; t++) await sleep(5);
  const before = deliveries.size;
  await a.kill9();
  const peakA = a.peakMiB;
  const t0 = performance.now();
  a = await Instance.start(s.env);
  api = client(a.url, s.key);
  const end = Date.now() + 180_000;
  let statuses = new Map<string, string>();
  for (;;) {
    statuses = new Map((await listRuns(a.url, s.key, pipeline.id)).map((r) => [r.id, r.status]));
    const done = [...runIds].every(([id, name]) => statuses.get(id) === "delivered" && deliveries.has(name));
    if (done || Date.now() > end) break;
    await sleep(100);
  }
  const at = performance.now();
  // Each delivered file whole: a header and 20,000 rows.
  const whole = (name: string) => Bun.file(join(outbound, name)).text().then((t) => t.split("\n").filter(Boolean).length === 20_001, () => false);
  let lost = 0;
  for (const [id, name] of runIds) if (statuses.get(id) !== "delivered" || !(await whole(name))) lost++;
  const leftovers = readdirSync(outbound).filter((f) => f.endsWith(".part")).length;
  const duplicated = [...runIds.values()].reduce((m, name) => m + Math.max(0, (deliveries.get(name) ?? 0) - 1), 0);
  watcher.close();
  await a.stop();
  await sshd.stop();
  await s.drop();
  return [
    `kill -9 during delivery to a customer SFTP server (${dialect}; killed while writing a temp file, ${before} delivered before, ${leftovers} temp files left)`,
    runIds.size,
    lost,
    duplicated,
    0,
    other5xx,
    secs(at - t0),
    `${Math.max(peakA, a.peakMiB)} MiB`,
  ];
}
