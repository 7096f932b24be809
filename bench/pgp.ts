/**
 * A CSV gzipped and then PGP-encrypted (by the real gpg, signed by the
 * partner) processed end to end through the API, side by side in one run
 * with `gpg --decrypt | gunzip` piped to the papaparse baseline
 * (bench/papaparse-only.ts, one pass). The service decrypts with the
 * connection's key and checks the partner's signature. Reports the times,
 * the ratio (baseline seconds / service seconds; goal >= 0.5) and the
 * service's peak RSS (goal < 300 MB). The same CSV only gzipped is timed
 * too, against `gunzip | papaparse`.
 *   bun bench/pgp.ts [rows=11500000]
 * Writes bench/results/pgp.md.
 */
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { Gpg } from "../test/helpers/gpg";
import { BENCH_FIELD_MAPPINGS, BENCH_SCHEMA, fmt, machine, peakRssMiB, QUIET_SERVERS, startService, table, tempDir, upload, waitForRun, writeCsv } from "./lib";

const rows = Number(process.argv[2] ?? 11_500_000);
const dir = tempDir("fps-bench-pgp-");
const csv = join(dir, "rows.csv");
const enc = join(dir, "rows.csv.gz.pgp");
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
const loadBefore = load();

const bytes = await writeCsv(csv, rows);
const sh = (cmd: string, env: Record<string, string> = {}) => {
  const p = Bun.spawnSync(["sh", "-c", cmd], { env: { ...process.env, ...env } });
  if (p.exitCode !== 0) throw new Error(`${cmd}: ${p.stderr.toString()}`);
  return p.stdout.toString();
};
sh(`gzip -1 -k -f ${csv}`);
const gpg = new Gpg();
const service = gpg.generate("service@files.example", "bench-pass");
const partner = gpg.generate("partner@acme.example");
// Already gzipped: gpg is told not to compress again, as a partner's script would.
sh(`gpg --batch --yes --quiet --pinentry-mode loopback --passphrase '' --trust-model always --compress-algo none -r service@files.example -u partner@acme.example --sign --encrypt -o ${enc} ${csv}.gz`, { GNUPGHOME: gpg.home });
const encBytes = Bun.file(enc).size;
console.error(`generated ${fmt(rows)} rows, ${(bytes / 1e6).toFixed(0)} MB CSV, ${(encBytes / 1e6).toFixed(0)} MB encrypted; load ${loadBefore}`);

// The baseline: gpg decrypts, gunzip inflates, papaparse parses.
const b0 = performance.now();
const out = JSON.parse(
  sh(`gpg --batch --quiet --pinentry-mode loopback --passphrase bench-pass --decrypt ${enc} | gunzip | ${process.execPath} ${join(import.meta.dir, "papaparse-only.ts")} /dev/stdin 1`, { GNUPGHOME: gpg.home }),
) as { rows: number };
const baselineSeconds = (performance.now() - b0) / 1000;
if (out.rows !== rows) throw new Error(`baseline read ${out.rows} rows, expected ${rows}`);
const g0 = performance.now();
const gzOut = JSON.parse(sh(`gunzip -c ${csv}.gz | ${process.execPath} ${join(import.meta.dir, "papaparse-only.ts")} /dev/stdin 1`)) as { rows: number };
const gzipBaselineSeconds = (performance.now() - g0) / 1000;
if (gzOut.rows !== rows) throw new Error(`gzip baseline read ${gzOut.rows} rows, expected ${rows}`);

const svc = await startService({ ...QUIET_SERVERS });
type Result = { seconds: number; peak: number; metadata: any };
let result: Result;
let gzipResult: Result;
try {
  const conn = await svc.api("POST", "/connections", {
    name: "Bench PGP feed",
    type: "SFTP",
    useHostedSFTP: true,
    pgpPrivateKey: service.privateKey,
    pgpPassphrase: "bench-pass",
    pgpPartnerPublicKey: partner.publicKey,
  });
  const schema = await svc.api("POST", "/schemas", { name: "Bench PGP rows", definition: BENCH_SCHEMA });
  const pipeline = await svc.api("POST", "/pipelines", {
    name: "Bench PGP",
    clientId: conn.id,
    schemaId: schema.id,
    mappings: { fieldMappings: BENCH_FIELD_MAPPINGS, options: { format: "csv" }, validations: { onInvalidRow: "skip" } },
  });
  const timed = async (path: string): Promise<Result> => {
    const t0 = performance.now();
    const run = await upload(svc, pipeline.id, path);
    const done = await waitForRun(svc, run.id);
    const seconds = (performance.now() - t0) / 1000;
    if (done.status !== "completed") throw new Error(`run ended ${done.status}: ${done.errorMessage}`);
    if (done.metadata?.rows?.total !== rows) throw new Error(`run read ${done.metadata?.rows?.total} rows, expected ${rows}`);
    return { seconds, peak: peakRssMiB(svc.pid), metadata: done.metadata };
  };
  result = await timed(enc);
  // Peak RSS is the process's high-water mark: the gzip row's covers both runs.
  gzipResult = await timed(`${csv}.gz`);
} finally {
  await svc.stop();
  gpg.close();
}

const ratio = baselineSeconds / result.seconds;
const md = `# PGP input benchmark

\`bun bench/pgp.ts ${rows}\` on ${machine()}; load average before: ${loadBefore}, after: ${load()}.

A ${(bytes / 1e6).toFixed(0)} MB CSV (${fmt(rows)} rows, 10 columns), gzipped (\`gzip -1\`) and
encrypted and signed by gpg (${(encBytes / 1e6).toFixed(0)} MB), processed end to end through the
API (upload, decrypt, verify the signature, gunzip, parse, map, validate, write), against
\`gpg --decrypt | gunzip | papaparse\` (parsing only) in the same run.

${table(
  ["", "seconds", "rows/s", "peak RSS (MiB)"],
  [
    ["`gpg --decrypt \\| gunzip \\| papaparse`", baselineSeconds.toFixed(1), fmt(rows / baselineSeconds), "-"],
    ["service, end to end", result.seconds.toFixed(1), fmt(rows / result.seconds), String(result.peak)],
  ],
)}

Ratio (baseline seconds / service seconds): **${ratio.toFixed(2)}x** (goal >= 0.5x); service peak RSS
**${result.peak} MiB** (goal < 300 MB). Run input metadata: \`${JSON.stringify(result.metadata.input)}\`;
processMs ${result.metadata.timings?.processMs}.

The same CSV only gzipped (${(Bun.file(`${csv}.gz`).size / 1e6).toFixed(0)} MB), after it, to the same service:

${table(
  ["", "seconds", "rows/s", "peak RSS (MiB), both runs"],
  [
    ["`gunzip \\| papaparse`", gzipBaselineSeconds.toFixed(1), fmt(rows / gzipBaselineSeconds), "-"],
    ["service, end to end", gzipResult.seconds.toFixed(1), fmt(rows / gzipResult.seconds), String(gzipResult.peak)],
  ],
)}

Ratio: **${(gzipBaselineSeconds / gzipResult.seconds).toFixed(2)}x**; processMs ${gzipResult.metadata.timings?.processMs}.
`;
writeFileSync(join(import.meta.dir, "results", "pgp.md"), md);
console.log(md);
