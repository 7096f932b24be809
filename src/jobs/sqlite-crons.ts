import { and, eq, lt } from "drizzle-orm";
import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { Database, Writer } from "../../db/client";
import { jobs } from "../../db/sqlite/schema/jobs";
import type { Logger } from "../logger";
import { latestSlot } from "./cron";
import type { CronSpec, JobSpec } from "./port";

/**
 * Schedules of the SQLite queue. Each keeps its last fired slot in a row of
 * its own in the jobs table: `cron:<name>`, status "cron", never claimed.
 */
const cronRowId = (name: string) => `cron:${name}`;

/** The SQLite queue's tables are SQLite's: a writer or reader of the embedded database, typed as such. */
export const asSqlite = (w: Writer | Database["read"]) => w as unknown as BunSQLiteDatabase<Record<string, never>>;

/** The first time an instance sees a schedule it records the current slot as done: a new schedule fires from its next slot. */
export async function registerCrons(db: Database, crons: CronSpec[]): Promise<void> {
  if (crons.length === 0) return;
  await db.tx(async (w) => {
    const now = new Date();
    for (const c of crons) {
      await asSqlite(w)
        .insert(jobs)
        .values({
          id: cronRowId(c.name),
          name: c.job,
          payload: { cron: c.cron },
          status: "cron",
          attempts: 0,
          maxAttempts: 0,
          runAt: latestSlot(c.cron, now),
          createdAt: now,
          updatedAt: now,
        })
        .onConflictDoNothing();
    }
  });
}

/**
 * Fires each schedule's latest slot once: the row's run_at moves to the
 * slot in the same transaction that enqueues the job, so neither a second
 * instance nor a restart fires it again. Slots that passed before this
 * instance started are not caught up (graphile-worker without backfill
 * does the same).
 */
export async function fireCrons(
db: Database,
crons: CronSpec[],
o: { startedAt: Date; log: Logger; enqueue: (w: Writer, spec: JobSpec) => Promise<void> },
): Promise<void> {
  if (crons.length === 0) return;
  const now = new Date();
  const due = crons
    .map((c) => ({ c, slot: latestSlot(c.cron, now) }))
    .filter(({ slot }) => slot.getTime() >= o.startedAt.getTime() - 1000);
  if (due.length === 0) return;
  await db.tx(async (w) => {
    for (const { c, slot } of due) {
      const moved = await asSqlite(w)
        .update(jobs)
        .set({ runAt: slot, updatedAt: now })
        .where(and(eq(jobs.id, cronRowId(c.name)), eq(jobs.status, "cron"), lt(jobs.runAt, slot)))
        .returning({ id: jobs.id });
      if (moved.length === 0) continue;
      await o.enqueue(w, { name: c.job, payload: c.payload ?? null, runAt: slot });
      o.log.info({ cron: c.name, slot }, "cron fired");
    }
  });
}
