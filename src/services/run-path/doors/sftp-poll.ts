import { posix } from "node:path";
import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import { z } from "zod";
import type { SftpEntry, SftpSession } from "../../../adapters/sftp/port";
import { newId } from "../../../domain/ids";
import type { ServiceContext } from "../../context";
import { loadConnection } from "../../connections/record";
import { type InboundResult, ingest } from "../ingest";
import { isTemporaryName } from "../../spaces";
import { customerLogin, loginFailure, remoteFolders } from "../../connections/remote";

/**
 * Polling customers' own SFTP servers (docs/decisions/customer-sftp.md).
 *
 * A cron job (`sftp.poll-all`, SFTP_POLL_CRON) enqueues one `sftp.poll` job
 * per self-hosted connection with an active inbound pipeline, keyed by the
 * connection, so one connection is never polled twice at once. A poll logs
 * in, lists the inbound folder and, for each regular file:
 * - a temporary name (`.part`, `.filepart`, `.tmp`, leading `.`) is skipped;
 * - a version (path, size, mtime) seen for the first time is remembered in
 *   sftp_pickups and left for a later poll: it may still be growing;
 * - a version seen unchanged at least SFTP_POLL_SETTLE_SECONDS ago is taken:
 *   its bytes stream straight from the server into ingest (one run
 *   per active inbound pipeline), and only then is the version recorded as
 *   taken. The runs' idempotency key names the version, so a crash between
 *   the two starts nothing twice on the next poll;
 * - a taken version is never taken again; when processedFolder is set it is
 *   moved there (a failed move is retried on later polls).
 */
export const SFTP_POLL_JOB = "sftp.poll";
export const SFTP_POLL_ALL_JOB = "sftp.poll-all";
/** Files taken in one poll at most; the rest wait for the next one, so one poll stays short. */
export const MAX_TAKEN_PER_POLL = 100;

export const SftpPollPayload = z.object({ workspaceId: z.string().min(1), connectionId: z.string().min(1) });
export type SftpPollPayload = z.infer<typeof SftpPollPayload>;

export const pollJobKey = (connectionId: string) => `${SFTP_POLL_JOB}:${connectionId}`;

/** Enqueues a poll for every self-hosted SFTP connection that has an active inbound pipeline; returns how many. */
export async function schedulePolls(ctx: ServiceContext): Promise<number> {
  const { connections: c, pipelines: p } = ctx.db.t;
  const due = await ctx.db.read
    .selectDistinct({ workspaceId: c.workspaceId, connectionId: c.id })
    .from(c)
    .innerJoin(p, eq(p.connectionId, c.id))
    .where(and(eq(c.type, "SFTP"), eq(c.useHostedSftp, false), eq(p.direction, "inbound"), eq(p.isActive, true)));
  for (const d of due) {
    await ctx.queue.add({ name: SFTP_POLL_JOB, payload: d satisfies SftpPollPayload, key: pollJobKey(d.connectionId), maxAttempts: 1 });
  }
  return due.length;
}

export interface PollReport {
  connectionId: string;
  /** Set when the poll could not look at the folder at all (login, listing). */
  error: string | null;
  /** Regular files in the inbound folder. */
  listed: number;
  taken: { path: string; outcome: string; runIds: string[] }[];
  /** First seen (or changed) in this poll, or not settled yet: left for a later poll. */
  waiting: string[];
  skipped: { path: string; reason: string }[];
  /** Taking failed (the read broke, storage failed): not recorded, tried again on the next poll. */
  failed: { path: string; reason: string }[];
  moved: { path: string; to: string }[];
  moveFailed: { path: string; reason: string }[];
}

type PickupRow = typeof import("../../../../db/pg/schema").sftpPickups.$inferSelect;

export async function pollConnection(ctx: ServiceContext, opts: SftpPollPayload & { signal?: AbortSignal }): Promise<PollReport> {
  const report: PollReport = { connectionId: opts.connectionId, error: null, listed: 0, taken: [], waiting: [], skipped: [], failed: [], moved: [], moveFailed: [] };
  const rec = await loadConnection(ctx, { workspaceId: opts.workspaceId, id: opts.connectionId }).catch(() => null);
  const login = rec && customerLogin(ctx, rec);
  if (!rec?.server || !login) {
    report.error = "not a self-hosted SFTP connection (any more)";
    return report;
  }
  const folders = remoteFolders(rec.server);
  const log = ctx.log.child({ connectionId: opts.connectionId, host: login.host, port: login.port, folder: folders.inbound });
  const session = await untilAborted(ctx.sftp.login(login), opts.signal);
  if (!session) {
    report.error = "stopped before the login finished (the service is shutting down)";
    return report;
  }
  if (!session.ok) {
    report.error = loginFailure(login, session);
    log.warn({ stage: session.stage, reason: session.reason }, "sftp poll: login failed");
    return report;
  }
  try {
    await pollFolder(ctx, session.session, { ...opts, folders, host: login.host, report, signal: opts.signal });
  } finally {
    await session.session.close();
  }
  if (report.error) log.warn({ error: report.error }, "sftp poll: folder not read");
  else if (report.taken.length || report.failed.length || report.moveFailed.length) {
    log.info(
      { taken: report.taken.length, failed: report.failed, moveFailed: report.moveFailed, waiting: report.waiting.length },
      "sftp poll: files taken",
    );
  }
  return report;
}

async function pollFolder(
  ctx: ServiceContext,
  session: SftpSession,
  o: SftpPollPayload & { folders: ReturnType<typeof remoteFolders>; host: string; report: PollReport; signal?: AbortSignal },
): Promise<void> {
  const { report, folders } = o;
  const listed = await session.list(folders.inbound);
  if (!listed.ok) {
    report.error = `cannot list ${folders.inbound}: ${listed.reason}`;
    return;
  }
  // Oldest first, so files are taken in the order they were written.
  const files = listed.value.filter((e) => e.type === "file").sort((a, b) => a.mtime - b.mtime || a.name.localeCompare(b.name));
  report.listed = files.length;

  const t = ctx.db.t.sftpPickups;
  const paths = files.map((f) => f.path);
  const known: PickupRow[] = paths.length
    ? await ctx.db.read.select().from(t).where(and(eq(t.connectionId, o.connectionId), inArray(t.remotePath, paths)))
    : [];
  const versionOf = (f: SftpEntry) => known.find((r) => r.remotePath === f.path && r.size === f.size && r.mtime === f.mtime);

  const now = ctx.clock.now();
  const settledBefore = now.getTime() - ctx.settings.sftpPoll.settleSeconds * 1000;
  let processedReady: boolean | null = null;
  const ensureProcessed = async () => {
    if (processedReady === null && folders.processed) {
      const made = await session.mkdirp(folders.processed);
      processedReady = made.ok;
      if (!made.ok) return made.reason;
    }
    return processedReady ? null : `cannot create ${folders.processed}`;
  };

  let takenCount = 0;
  for (const f of files) {
    if (o.signal?.aborted) break;
    if (isTemporaryName(f.name)) {
      report.skipped.push({ path: f.path, reason: "temporary name: waits until renamed to a final name" });
      continue;
    }
    const version = versionOf(f);
    if (version?.takenAt) {
      // Taken before and still here: retry the move that did not happen.
      if (folders.processed && !version.movedTo) await moveTaken(ctx, session, f, version, folders.processed, ensureProcessed, report);
      continue;
    }
    if (!version) {
      await ctx.db.tx((w) =>
        w
          .insert(t)
          .values({
            id: newId("sftpPickup"),
            workspaceId: o.workspaceId,
            connectionId: o.connectionId,
            remotePath: f.path,
            size: f.size,
            mtime: f.mtime,
            firstSeenAt: now,
            takenAt: null,
            outcome: null,
            runIds: [],
            arrivalId: null,
            movedTo: null,
            moveError: null,
          })
          .onConflictDoNothing(),
      );
      report.waiting.push(f.path);
      continue;
    }
    if (version.firstSeenAt.getTime() > settledBefore || takenCount >= MAX_TAKEN_PER_POLL) {
      report.waiting.push(f.path);
      continue;
    }
    takenCount++;
    const taken = await take(ctx, session, f, version, o);
    if (!taken) continue;
    if (folders.processed && taken.outcome === "started") await moveTaken(ctx, session, f, taken, folders.processed, ensureProcessed, report);
  }

  // Versions seen but never taken that are gone or changed since: forget them (a changed file is a new version).
  const present = new Set(files.map((f) => `${f.path}\u0000${f.size}\u0000${f.mtime}`));
  const stale = (await ctx.db.read.select().from(t).where(and(eq(t.connectionId, o.connectionId), isNull(t.takenAt))).orderBy(asc(t.firstSeenAt)))
    .filter((r) => !present.has(`${r.remotePath}\u0000${r.size}\u0000${r.mtime}`))
    .map((r) => r.id);
  if (stale.length) await ctx.db.tx((w) => w.delete(t).where(inArray(t.id, stale)));
}

/** Starts the runs of one file version and records it as taken; null when it must be tried again later. */
async function take(
  ctx: ServiceContext,
  session: SftpSession,
  f: SftpEntry,
  version: PickupRow,
  o: SftpPollPayload & { host: string; report: PollReport },
): Promise<PickupRow | null> {
  const { report } = o;
  let result: InboundResult;
  try {
    result = await ingest(ctx, {
      door: "sftp_poll",
      workspaceId: o.workspaceId,
      connectionId: o.connectionId,
      filename: f.name,
      // Each pipeline's run reads the file from the server; nothing is opened for a run that already exists.
      openBody: async () => exactly(session.read(f.path), f),
      path: f.path,
      size: f.size,
      idempotencyKey: `sftp_poll:${o.connectionId}:${f.path}:${f.size}:${f.mtime}`,
      metadata: { host: o.host, remotePath: f.path, remoteSize: f.size, remoteMtime: new Date(f.mtime * 1000).toISOString() },
    });
  } catch (e) {
    report.failed.push({ path: f.path, reason: e instanceof Error ? e.message : String(e) });
    return null;
  }
  const { arrival, runIds } = result;
  if (arrival.outcome === "ignored") {
    // No active inbound pipeline any more: the file stays, and is taken once a pipeline is active again.
    report.skipped.push({ path: f.path, reason: arrival.reason ?? "started nothing" });
    return null;
  }
  const t = ctx.db.t.sftpPickups;
  const patch = { takenAt: ctx.clock.now(), outcome: arrival.outcome, runIds, arrivalId: arrival.id };
  await ctx.db.tx((w) => w.update(t).set(patch).where(eq(t.id, version.id)));
  report.taken.push({ path: f.path, outcome: arrival.outcome, runIds });
  return { ...version, ...patch };
}

/** Moves a taken file into the processed folder; an existing file of that name there is kept and this one gets a suffix. */
async function moveTaken(
  ctx: ServiceContext,
  session: SftpSession,
  f: SftpEntry,
  version: PickupRow,
  processed: string,
  ensureProcessed: () => Promise<string | null>,
  report: PollReport,
): Promise<void> {
  const t = ctx.db.t.sftpPickups;
  const problem = await ensureProcessed();
  let to = posix.join(processed, f.name);
  let moved = problem ? null : await session.rename(f.path, to);
  if (moved && !moved.ok && moved.code === "exists") {
    const ext = posix.extname(f.name);
    const stamp = (version.takenAt ?? ctx.clock.now()).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
    to = posix.join(processed, `${f.name.slice(0, f.name.length - ext.length)}.${stamp}.${version.id.slice(-6)}${ext}`);
    moved = await session.rename(f.path, to);
  }
  if (moved?.ok) {
    await ctx.db.tx((w) => w.update(t).set({ movedTo: to, moveError: null }).where(eq(t.id, version.id)));
    report.moved.push({ path: f.path, to });
  } else {
    const reason = problem ?? (moved && !moved.ok ? moved.reason : "not moved");
    await ctx.db.tx((w) => w.update(t).set({ moveError: reason.slice(0, 500) }).where(eq(t.id, version.id)));
    report.moveFailed.push({ path: f.path, reason });
  }
}

/**
 * The file's bytes, failing at the end when they are not the size it was
 * listed with: it changed while being read, so the run is not started (its
 * stored original is removed) and the new version is taken on a later poll.
 */
async function* exactly(body: AsyncIterable<Uint8Array>, f: SftpEntry): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > f.size) break;
    yield chunk;
  }
  if (size !== f.size) throw new Error(`${f.path} changed while it was read (listed with ${f.size} bytes, read ${size}${size > f.size ? " or more" : ""})`);
}

/** The login, or null once `signal` aborts (a login that still succeeds later is closed). */
async function untilAborted<T extends { ok: boolean }>(login: Promise<T>, signal?: AbortSignal): Promise<T | null> {
  if (!signal) return login;
  if (signal.aborted) {
    void login.then(closeLate);
    return null;
  }
  let onAbort!: () => void;
  const aborted = new Promise<null>((r) => (onAbort = () => r(null)));
  signal.addEventListener("abort", onAbort, { once: true });
  const first = await Promise.race([login, aborted]);
  signal.removeEventListener("abort", onAbort);
  if (first === null) void login.then(closeLate);
  return first;
}

function closeLate(r: { ok: boolean }): void {
  if (r.ok) void (r as unknown as { session: SftpSession }).session.close();
}
