import { eq, inArray } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import type { ServiceContext } from "../context";

/**
 * Failed log-ins are counted per account and per client address within a
 * window; past the limit that key is refused until the lock ends, even with
 * the right password (docs/decisions/people.md).
 */
export const THROTTLE = {
  windowMs: 15 * 60_000,
  lockMs: 15 * 60_000,
  account: 5,
  address: 20,
};

const keysOf = (email: string, address: string | null) => [`acct:${email}`, ...(address ? [`addr:${address}`] : [])];

/** Refuses when the account or the address is locked. */
export async function checkThrottle(ctx: ServiceContext, email: string, address: string | null): Promise<void> {
  const t = ctx.db.t.loginThrottle;
  const rows = await ctx.db.read.select().from(t).where(inArray(t.key, keysOf(email, address)));
  const now = ctx.clock.now().getTime();
  const locked = rows.find((r) => r.lockedUntil && r.lockedUntil.getTime() > now);
  if (locked) {
    const seconds = Math.ceil((locked.lockedUntil!.getTime() - now) / 1000);
    throw new AppError("rate_limited", `too many failed log-ins for this ${locked.key.startsWith("acct:") ? "account" : "address"}; try again in ${seconds} s`, {
      retryAfter: seconds,
    });
  }
}

export async function recordFailure(ctx: ServiceContext, email: string, address: string | null): Promise<void> {
  const t = ctx.db.t.loginThrottle;
  const now = ctx.clock.now();
  await ctx.db.tx(async (w) => {
    for (const key of keysOf(email, address)) {
      const limit = key.startsWith("acct:") ? THROTTLE.account : THROTTLE.address;
      const [row] = await w.select().from(t).where(eq(t.key, key));
      const fresh = !row || now.getTime() - row.windowStart.getTime() > THROTTLE.windowMs;
      const failures = fresh ? 1 : row.failures + 1;
      const next = {
        key,
        failures: failures >= limit ? 0 : failures,
        windowStart: fresh || failures >= limit ? now : row.windowStart,
        lockedUntil: failures >= limit ? new Date(now.getTime() + THROTTLE.lockMs) : (row?.lockedUntil ?? null),
      };
      if (row) await w.update(t).set(next).where(eq(t.key, key));
      else await w.insert(t).values(next);
    }
  });
}

/** A successful log-in clears the account's count (not the address's: one good account does not excuse guessing others). */
export async function clearAccount(ctx: ServiceContext, email: string): Promise<void> {
  const t = ctx.db.t.loginThrottle;
  await ctx.db.tx((w) => w.delete(t).where(eq(t.key, `acct:${email}`)));
}
