import { hostname } from "node:os";
import type { ServiceContext } from "../context";

/** One dependency checked by /readyz. */
export interface ReadinessCheck {
  name: "database" | "storage" | "jobs" | "sftp" | "smtp";
  status: "ok" | "fail";
  /** How long the check took, in milliseconds. */
  ms: number;
  /** Why it failed (no secrets: an error message or a state). */
  error?: string;
}

export interface Readiness {
  ok: boolean;
  checks: ReadinessCheck[];
}

/** The listeners /readyz asks about: the hosted SFTP and inbound SMTP servers. */
export interface Listeners {
  sftp: () => boolean;
  smtp: () => boolean;
}

/** A check that has not answered by then fails: /readyz answers within about this long whatever hangs. */
export const READINESS_TIMEOUT_MS = 2_000;

/** Where the store check writes: one small object per instance, overwritten each time. */
const probeKey = `system/readyz/${hostname()}-${process.pid}`;

async function timed(name: ReadinessCheck["name"], timeoutMs: number, check: () => Promise<void>): Promise<ReadinessCheck> {
  const t0 = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      check(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))),
    ]);
    return { name, status: "ok", ms: Math.round(performance.now() - t0) };
  } catch (e) {
    return { name, status: "fail", ms: Math.round(performance.now() - t0), error: e instanceof Error ? e.message : String(e) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Is this instance ready for traffic: the database answers, the object
 * store writes and reads back, the job queue runs, and the SFTP and SMTP
 * listeners are up. Checks run at once, each bounded by `timeoutMs`;
 * concurrent callers share one round of checks, so a burst of probes costs
 * one.
 */
export function readinessChecker(svc: ServiceContext, listeners: Listeners, timeoutMs = READINESS_TIMEOUT_MS): () => Promise<Readiness> {
  let inFlight: Promise<Readiness> | null = null;
  const round = async (): Promise<Readiness> => {
    const checks = await Promise.all([
      timed("database", timeoutMs, () => svc.db.ping()),
      timed("storage", timeoutMs, async () => {
        const token = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
        await svc.storage.put(probeKey, new TextEncoder().encode(token), { contentType: "text/plain" });
        const stream = await svc.storage.get(probeKey);
        const back = stream ? await new Response(stream).text() : null;
        if (back !== token) throw new Error("the object read back differs from the one written");
      }),
      timed("jobs", timeoutMs, async () => {
        const h = svc.queue.health();
        if (h.state !== "running") throw new Error(`job runner ${h.state}${h.lastError ? `: ${h.lastError}` : ""}`);
      }),
      timed("sftp", timeoutMs, async () => {
        if (!listeners.sftp()) throw new Error("the hosted SFTP server is not listening");
      }),
      timed("smtp", timeoutMs, async () => {
        if (!listeners.smtp()) throw new Error("the inbound SMTP server is not listening");
      }),
    ]);
    return { ok: checks.every((c) => c.status === "ok"), checks };
  };
  return () => (inFlight ??= round().finally(() => (inFlight = null)));
}
