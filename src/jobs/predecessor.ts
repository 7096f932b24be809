import { hostname } from "node:os";

/** The worker ids of queues made in this process (a process may hold several: tests do). */
const ours = new Set<string>();

/** A SQLite worker id: `host:pid:random` (src/jobs/index.ts). */
export function sqliteWorkerId(): string {
  const id = `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  ours.add(id);
  return id;
}

/**
 * Of the worker ids holding jobs, those of processes on this host that no
 * longer exist: a restarted instance knows its predecessor is dead and need
 * not wait out its lease. Ids of other hosts, of live processes (another
 * instance, or a pid reused since), and ids it cannot read are left to
 * their lease.
 */
export function deadPredecessors(holders: readonly string[], self: string): string[] {
  const host = hostname();
  return holders.filter((id) => {
    if (id === self || ours.has(id)) return false;
    const m = /^(.*):(\d+):[0-9a-f]{8}$/.exec(id);
    if (!m || m[1] !== host) return false;
    const pid = Number(m[2]);
    // Our own pid but not one of our ids: an earlier process that had it (a container's pid 1 restarted).
    if (pid === process.pid) return true;
    try {
      process.kill(pid, 0);
      return false;
    } catch (e) {
      // EPERM: it exists but is someone else's.
      return (e as NodeJS.ErrnoException).code === "ESRCH";
    }
  });
}
