import type { Database } from "../../../db/client";
import type { RateLimitSettings } from "../../config";
import type { Clock } from "../../domain/clock";
import type { Logger } from "../../logger";
import { type Budget, RateLimiter, type Verdict } from "./limiter";

export type { Budget, Verdict } from "./limiter";

/** What a key's call was measured against: each enabled budget with its verdict. */
export interface KeyVerdicts {
  requests: Verdict | null;
  bytes: Verdict | null;
  /** The first budget that refused the call, or null. */
  refusedBy: "requests" | "upload-bytes" | null;
}

function verdicts(requests: Verdict | null, bytes: Verdict | null): KeyVerdicts {
  const refusedBy = requests && !requests.allowed ? "requests" : bytes && !bytes.allowed ? "upload-bytes" : null;
  return { requests, bytes, refusedBy };
}

/**
 * The service's budgets (RATE_LIMIT_*): requests and uploaded bytes per API
 * key, failed logins per client address. A budget whose quota is 0 is off.
 */
export class RateLimits {
  readonly requests: Budget | null;
  readonly bytes: Budget | null;
  readonly authFailures: Budget | null;
  private readonly limiter: RateLimiter;

  constructor(opts: { db: Database; settings: RateLimitSettings; clock: Clock; log: Logger }) {
    const { settings } = opts;
    // The embedded default counts in process; Postgres means instances that share one budget.
    this.limiter = new RateLimiter({
      db: opts.db.dialect === "pg" ? opts.db : null,
      syncMs: settings.syncMs,
      now: () => opts.clock.now().getTime(),
      log: opts.log,
    });
    const windowMs = settings.windowSeconds * 1000;
    const budget = (name: string, quota: number) => (quota > 0 ? this.limiter.register({ name, quota, windowMs }) : null);
    this.requests = budget("requests", settings.requests);
    this.bytes = budget("upload-bytes", settings.uploadBytes);
    this.authFailures = budget("failed-logins", settings.authFailures);
  }

  /**
   * One call of a key, with the body bytes it declares (0 without a body);
   * refused calls count nothing. Answers at once when both counts are at
   * hand (the hot path), else once the shared counts are read.
   */
  forKey(keyId: string, bytes: number): KeyVerdicts | Promise<KeyVerdicts> {
    const r = this.requests ? this.limiter.take(this.requests, keyId, 1) : null;
    if (r instanceof Promise) return this.forKeySlow(r, keyId, bytes);
    const b = this.bytes ? this.limiter.take(this.bytes, keyId, r && !r.allowed ? 0 : bytes) : null;
    if (b instanceof Promise) return this.forKeySlow(r, keyId, bytes, b);
    return verdicts(r, b);
  }

  private async forKeySlow(r: Verdict | null | Promise<Verdict>, keyId: string, bytes: number, b?: Promise<Verdict>): Promise<KeyVerdicts> {
    const requests = await r;
    const taken = b ?? (this.bytes ? this.limiter.take(this.bytes, keyId, requests && !requests.allowed ? 0 : bytes) : null);
    return verdicts(requests, await taken);
  }

  /** Bytes a call uploaded beyond what it declared (a streamed body without content-length). */
  chargeBytes(keyId: string, bytes: number): void {
    if (this.bytes && bytes > 0) this.limiter.charge(this.bytes, keyId, bytes);
  }

  /** Whether this address may still try a key (null: no limit). */
  async loginAllowed(address: string): Promise<Verdict | null> {
    return this.authFailures ? this.limiter.take(this.authFailures, address, 0, 1) : null;
  }

  /** A refused key from this address. */
  failedLogin(address: string): void {
    if (this.authFailures) this.limiter.charge(this.authFailures, address, 1);
  }

  flush(): Promise<void> {
    return this.limiter.flush();
  }

  close(): Promise<void> {
    return this.limiter.close();
  }
}
