/**
 * Slows and then refuses repeated failed logins from one address.
 *
 * - Failures are counted per remote address in a window of `lockoutMs` that
 *   starts at the first failure.
 * - Each failure is answered after `failures x failureDelayMs` (at most
 *   MAX_DELAY_MS), so guessing gets slower with every miss.
 * - At `maxFailures` the address is refused for `lockoutMs`: every attempt,
 *   even with the right credentials, is rejected without being checked.
 * - A successful login clears the address's count.
 *
 * State is in memory, per process: with several instances behind one load
 * balancer an address can make up to `maxFailures` attempts on each (see
 * docs/decisions/sftp.md).
 */
export interface LoginPolicy {
  maxFailures: number;
  lockoutMs: number;
  failureDelayMs: number;
}

export const MAX_DELAY_MS = 10_000;
/** Addresses tracked at most; beyond it the stalest are dropped (a spray from many addresses cannot grow memory without bound). */
const MAX_TRACKED = 100_000;

interface Entry {
  failures: number;
  windowStart: number;
  lockedUntil: number;
}

export type GuardVerdict = { locked: false } | { locked: true; retryAfterMs: number };

export class LoginGuard {
  private readonly entries = new Map<string, Entry>();

  constructor(
    readonly policy: LoginPolicy,
    private readonly now: () => number,
  ) {}

  check(address: string): GuardVerdict {
    const e = this.current(address);
    if (e && e.lockedUntil > this.now()) return { locked: true, retryAfterMs: e.lockedUntil - this.now() };
    return { locked: false };
  }

  /** Counts one failure; says how long to wait before answering and whether the address is now refused. */
  fail(address: string): { failures: number; delayMs: number; lockedNow: boolean } {
    const now = this.now();
    let e = this.current(address);
    if (!e) {
      if (this.entries.size >= MAX_TRACKED) this.prune(now);
      e = { failures: 0, windowStart: now, lockedUntil: 0 };
      this.entries.set(address, e);
    }
    e.failures++;
    const lockedNow = e.failures >= this.policy.maxFailures && e.lockedUntil <= now;
    if (lockedNow) e.lockedUntil = now + this.policy.lockoutMs;
    return { failures: e.failures, delayMs: Math.min(MAX_DELAY_MS, e.failures * this.policy.failureDelayMs), lockedNow };
  }

  succeed(address: string): void {
    this.entries.delete(address);
  }

  /** The address's entry while its window or lockout lasts. */
  private current(address: string): Entry | undefined {
    const e = this.entries.get(address);
    if (!e) return undefined;
    const now = this.now();
    if (e.lockedUntil > now || now - e.windowStart < this.policy.lockoutMs) return e;
    this.entries.delete(address);
    return undefined;
  }

  private prune(now: number): void {
    for (const [address, e] of this.entries) {
      if (e.lockedUntil <= now && now - e.windowStart >= this.policy.lockoutMs) this.entries.delete(address);
    }
    // Still full: drop the oldest windows (Map keeps insertion order).
    for (const address of this.entries.keys()) {
      if (this.entries.size < MAX_TRACKED) break;
      this.entries.delete(address);
    }
  }
}
