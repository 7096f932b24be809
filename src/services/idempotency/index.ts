import { and, eq, lt } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../context";

/** How long a key's first answer is replayed (Stripe's 24 h); older keys may be used again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
export const IDEMPOTENCY_PURGE_JOB = "idempotency.purge";
export const IDEMPOTENCY_PURGE_CRON = "41 * * * *";

const KEY = /^[\x21-\x7e]{1,255}$/;

export interface StoredAnswer {
  status: number;
  body: unknown;
  /** What the first request sent (null when it was never known). */
  fingerprint: string | null;
}

export type Claim = { kind: "claimed" } | { kind: "replay"; answer: StoredAnswer };

interface KeyRef {
  workspaceId: string;
  key: string;
}

const differentRequest = (key: string, first: string) =>
  new AppError("conflict", `Idempotency-Key: '${key}' was already used for a different request (${first}); use a new key for a new request`);

/** The key as sent, checked: 1-255 visible ASCII characters. */
export function checkIdempotencyKey(raw: string): string {
  if (!KEY.test(raw)) throw new AppError("invalid_input", "Idempotency-Key: must be 1-255 visible ASCII characters (a UUID is a good choice)");
  return raw;
}

/**
 * Claims `key` for this request before any work (docs/decisions/idempotency.md):
 * the first request inserts the row and goes ahead; a later one with the same
 * method, route and fingerprint gets the first answer once it is stored; a
 * different request with the key, or one while the first is still under
 * way, is a 409 naming the key.
 */
export async function claimIdempotencyKey(
  ctx: ServiceContext,
  opts: KeyRef & { method: string; path: string; fingerprint: string | null },
): Promise<Claim> {
  const t = ctx.db.t.idempotencyKeys;
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = ctx.clock.now();
    const inserted = await ctx.db.tx(
      (w) =>
        w
          .insert(t)
          .values({ workspaceId: opts.workspaceId, key: opts.key, method: opts.method, path: opts.path, fingerprint: opts.fingerprint, state: "in_progress", createdAt: now })
          .onConflictDoNothing()
          .returning({ key: t.key }),
      { quiet: true },
    );
    if (inserted.length > 0) return { kind: "claimed" };
    const where = and(eq(t.workspaceId, opts.workspaceId), eq(t.key, opts.key));
    const [row] = await ctx.db.read.select().from(t).where(where);
    if (!row) continue;
    if (now.getTime() - row.createdAt.getTime() >= IDEMPOTENCY_TTL_MS) {
      await ctx.db.tx((w) => w.delete(t).where(and(where, eq(t.createdAt, row.createdAt))), { quiet: true });
      continue;
    }
    if (row.method !== opts.method || row.path !== opts.path) throw differentRequest(opts.key, `${row.method} ${row.path}`);
    if (opts.fingerprint !== null && row.fingerprint !== null && row.fingerprint !== opts.fingerprint) {
      throw differentRequest(opts.key, `${row.method} ${row.path} with another body`);
    }
    if (row.state !== "completed") {
      throw new AppError("conflict", `Idempotency-Key: a request with '${opts.key}' is still being processed; retry once it has answered`);
    }
    const body = JSON.parse(ctx.secrets.open((row.responseBody as { sealed: string }).sealed));
    return { kind: "replay", answer: { status: row.responseStatus ?? 200, body, fingerprint: row.fingerprint } };
  }
  throw new AppError("conflict", `Idempotency-Key: '${opts.key}' is contended; retry`);
}

/** A replay whose body could only be read now (an upload): the same request gets the first answer, another a 409. */
export function replayFor(key: string, answer: StoredAnswer, fingerprint: string, first: string): StoredAnswer {
  if (answer.fingerprint !== null && answer.fingerprint !== fingerprint) throw differentRequest(key, `${first} with another body`);
  return answer;
}

/** Stores the first answer (a success); from now on the key replays it. */
export async function completeIdempotencyKey(ctx: ServiceContext, opts: KeyRef & { status: number; body: unknown; fingerprint: string | null }): Promise<void> {
  const t = ctx.db.t.idempotencyKeys;
  await ctx.db.tx(
    (w) =>
      w
        .update(t)
        // Sealed like every secret at rest: a first answer may carry one shown once (a webhook's signing secret).
        .set({ state: "completed", responseStatus: opts.status, responseBody: { sealed: ctx.secrets.seal(JSON.stringify(opts.body ?? null)) }, completedAt: ctx.clock.now(), ...(opts.fingerprint ? { fingerprint: opts.fingerprint } : {}) })
        .where(and(eq(t.workspaceId, opts.workspaceId), eq(t.key, opts.key), eq(t.state, "in_progress"))),
    { quiet: true },
  );
}

/** A request that failed changed nothing: its key is free again, so the client may retry with it. */
export async function releaseIdempotencyKey(ctx: ServiceContext, opts: KeyRef): Promise<void> {
  const t = ctx.db.t.idempotencyKeys;
  await ctx.db.tx((w) => w.delete(t).where(and(eq(t.workspaceId, opts.workspaceId), eq(t.key, opts.key), eq(t.state, "in_progress"))), { quiet: true });
}

/** Deletes keys past their 24 hours (hourly job). */
export async function purgeIdempotencyKeys(ctx: ServiceContext): Promise<number> {
  const t = ctx.db.t.idempotencyKeys;
  const before = new Date(ctx.clock.now().getTime() - IDEMPOTENCY_TTL_MS);
  const gone = await ctx.db.tx((w) => w.delete(t).where(lt(t.createdAt, before)).returning({ key: t.key }), { quiet: true });
  return gone.length;
}
