/**
 * Where a warm run's CPU goes, per thread of the service: the bench CSV
 * uploaded `runs` times to one fresh service (the first run, which starts the
 * workers, is left out), each thread's user and system time and minor page
 * faults read from /proc/PID/task/TID/stat before and after each run, summed
 * by thread name and averaged per run. For profiling (docs/decisions/engine.md,
 * "Stop 17"); BENCH_SERVICE_ENV tries a setting (bench/README.md).
 *   bun bench/engine-threads.ts [rows=1000000] [runs=5]
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { benchPipeline, fmt, followRuns, QUIET_SERVERS, startService, table, tempDir, upload, writeCsv } from "./lib";

const rows = Number(process.argv[2] ?? 1_000_000);
const runs = Math.max(2, Number(process.argv[3] ?? 5));
/** /proc reports CPU time in clock ticks: 100 a second on Linux (USER_HZ). */
const MS_PER_TICK = 10;

interface ThreadTimes {
  name: string;
  user: number;
  system: number;
  faults: number;
}

/** Each thread's counters, by thread id; a thread's name loses its number (`Worker`, `HeapHelper`, ...). */
function threads(pid: number): Map<string, ThreadTimes> {
  const out = new Map<string, ThreadTimes>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).replace(/[\d#]+$/, "");
    // Fields after the name: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    out.set(tid, { name, faults: Number(f[7]), user: Number(f[11]) * MS_PER_TICK, system: Number(f[12]) * MS_PER_TICK });
  }
  return out;
}

const dir = tempDir("fps-bench-threads-");
const file = join(dir, "rows.csv");
await writeCsv(file, rows);
const svc = await startService(QUIET_SERVERS);
try {
  const pipeline = await benchPipeline(svc);
  const follower = await followRuns(svc, pipeline.id);
  const byName = new Map<string, ThreadTimes>();
  const seconds: number[] = [];
  for (let i = 0; i < runs; i++) {
    const before = threads(svc.pid);
    const t0 = performance.now();
    const run = await upload(svc, pipeline.id, file);
    const done = await follower.wait(run.id);
    seconds.push((performance.now() - t0) / 1000);
    const after = threads(svc.pid);
    if (done.status !== "completed") throw new Error(`run ended ${done.status}: ${done.errorMessage}`);
    if (i === 0) continue;
    for (const [tid, t] of after) {
      const b = before.get(tid) ?? { name: t.name, user: 0, system: 0, faults: 0 };
      const sum = byName.get(t.name) ?? { name: t.name, user: 0, system: 0, faults: 0 };
      sum.user += t.user - b.user;
      sum.system += t.system - b.system;
      sum.faults += t.faults - b.faults;
      byName.set(t.name, sum);
    }
  }
  follower.close();
  const warm = runs - 1;
  const list = [...byName.values()].filter((t) => t.user + t.system > 0).sort((a, b) => b.user + b.system - (a.user + a.system));
  const total = list.reduce((s, t) => ({ user: s.user + t.user, system: s.system + t.system, faults: s.faults + t.faults }), { user: 0, system: 0, faults: 0 });
  console.log(`${fmt(rows)} rows; end to end per run: ${seconds.map((s) => s.toFixed(2)).join(", ")} s (the first starts the workers and is not counted below)\n`);
  console.log(
    table(
      ["thread", "user ms per run", "system ms per run", "minor faults per run"],
      [...list, { name: "all", ...total }].map((t) => [t.name, Math.round(t.user / warm), Math.round(t.system / warm), fmt(t.faults / warm)]),
    ),
  );
} finally {
  await svc.stop();
  rmSync(svc.env.DATA_DIR!, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
}
