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
  private readonly now: () => number;

  constructor(opts: { db: Database; settings: RateLimitSettings; clock: Clock; log: Logger }) {
    const { settings } = opts;
    this.now = () => opts.clock.millis();
    // The embedded default counts in process; Postgres means instances that share one budget.
    this.limiter = new RateLimiter({
      db: opts.db.dialect === "pg" ? opts.db : null,
      syncMs: settings.syncMs,
      now: this.now,
      log: opts.log,
    });
    const windowMs = settings.windowSeconds * 1000;
    const budget = (name: string, quota: number, watched = false) => (quota > 0 ? this.limiter.register({ name, quota, windowMs }, { watched }) : null);
    this.requests = budget("requests", settings.requests);
    this.bytes = budget("upload-bytes", settings.uploadBytes);
    // Checked on every request, counted only on a refused key: the addresses with failures are learnt at each sync.
    this.authFailures = budget("failed-logins", settings.authFailures, true);
  }

  /**
   * One call of a key, with the body bytes it declares (0 without a body);
   * refused calls count nothing. Answers at once when both counts are at
   * hand (the hot path), else once the shared counts are read.
   */
  forKey(keyId: string, bytes: number): KeyVerdicts | Promise<KeyVerdicts> {
    const now = this.now();
    const r = this.requests ? this.limiter.take(this.requests, keyId, 1, 1, now) : null;
    if (r instanceof Promise) return this.forKeySlow(r, keyId, bytes, now);
    const b = this.bytes ? this.limiter.take(this.bytes, keyId, r && !r.allowed ? 0 : bytes, undefined, now) : null;
    if (b instanceof Promise) return this.forKeySlow(r, keyId, bytes, now, b);
    return verdicts(r, b);
  }

  private async forKeySlow(r: Verdict | null | Promise<Verdict>, keyId: string, bytes: number, now: number, b?: Promise<Verdict>): Promise<KeyVerdicts> {
    const requests = await r;
    const taken = b ?? (this.bytes ? this.limiter.take(this.bytes, keyId, requests && !requests.allowed ? 0 : bytes, undefined, now) : null);
    return verdicts(requests, await taken);
  }

  /** Bytes a call uploaded beyond what it declared (a streamed body without content-length). */
  chargeBytes(keyId: string, bytes: number): void {
    if (this.bytes && bytes > 0) this.limiter.charge(this.bytes, keyId, bytes);
  }

  /**
   * Whether any address could be refused for failed logins now: in process,
   * only once one has been counted; on Postgres always (other instances count too).
   */
  loginsMayBeRefused(): boolean {
    return this.authFailures !== null && this.limiter.mayRefuse(this.authFailures);
  }

  /**
   * The refusal of an address that has used its failed logins (null: it may
   * still try a key, or there is no limit). Answers at once unless the
   * shared count has to be read first.
   */
  loginRefusal(address: string): Verdict | null | Promise<Verdict | null> {
    return this.authFailures ? this.limiter.refusal(this.authFailures, address, 1) : null;
  }

  /** A refused key from this address. */
  failedLogin(address: string): void {
    if (this.authFailures) this.limiter.charge(this.authFailures, address, 1);
  }

  flush(): Promise<void> {
    return this.limiter.flush();
  }

  /** Shares the last counts, giving up after `timeoutMs` (default 2 s) with a warning that names what was not shared. */
  close(timeoutMs?: number): Promise<void> {
    return this.limiter.close(timeoutMs);
  }
}
