import postgres from "postgres";
import { PG_CLOSE_TIMEOUT_SECONDS } from "../../../db/pg-close";
import { SIGNALS_CHANNEL } from "../../../db/read-cache";
import { settlesWithin } from "../../runtime/bounded";
import type { Logger } from "../../logger";
import { DEFAULT_BUFFER, Hub } from "./hub";
import type { EventBus, RunEvent } from "./port";
import { RunEventPayload } from "./shapes";

/** The channel every instance on one database listens on (NOTIFY is scoped to the database). */
export const CHANNEL = "fps_run_events";
/** Signals between instances (cache invalidation): `{origin, topic}`, on the same LISTEN connection (db/open-postgres.ts sends the read caches' from inside transactions). */
export const SIGNALS = SIGNALS_CHANNEL;
/** Postgres refuses NOTIFY payloads of 8000 bytes or more. */
const MAX_PAYLOAD = 7999;
/** How long closing waits for UNLISTEN before it ends the connection. */
const UNLISTEN_MS = 1_000;

/**
 * Several instances on one Postgres: an event goes to this process's
 * subscribers at once and to the other instances through NOTIFY on a
 * dedicated connection. The envelope names the sending instance so that it
 * ignores its own notification instead of delivering twice. postgres.js
 * keeps the LISTEN connection open and listens again after a reconnect;
 * notifications sent while it was down are lost (events are live hints,
 * the runs themselves are the record). Signals (cache invalidation between
 * instances) travel the same way on a second channel, over the same LISTEN
 * connection.
 */
export async function createPostgresEventBus(opts: { url: string; log: Logger; bufferSize?: number }): Promise<
  EventBus & { readonly subscribers: number }
> {
  const { log } = opts;
  const hub = new Hub(opts.bufferSize ?? DEFAULT_BUFFER);
  const origin = crypto.randomUUID();
  // max 1 for NOTIFY; listen() opens its own connection besides.
  const sql = postgres(opts.url, { max: 1, onnotice: () => {}, connection: { application_name: "fps-events" } });
  let listens = 0;
  const listening = await sql.listen(
    CHANNEL,
    (payload) => {
      const event = parseEnvelope(payload, origin, log);
      if (event) hub.deliver(event);
    },
    () => {
      if (listens++ > 0) log.warn({ channel: CHANNEL }, "event bus listening again after a reconnect; events in between were lost");
    },
  );
  const signalled = new Map<string, Set<() => void>>();
  const tell = (topic: string) => {
    for (const fn of signalled.get(topic) ?? []) {
      try {
        fn();
      } catch (err) {
        log.error({ err, topic }, "a signal listener failed");
      }
    }
  };
  let signalListens = 0;
  const signals = await sql.listen(
    SIGNALS,
    (payload) => {
      const s = parseSignal(payload);
      if (s && s.origin !== origin) tell(s.topic);
    },
    () => {
      // After a reconnect, signals sent meanwhile are lost: every topic counts as changed.
      if (signalListens++ > 0) for (const topic of signalled.keys()) tell(topic);
    },
  );
  let closed = false;
  return {
    async publish(event) {
      if (closed) return;
      hub.deliver(event);
      const payload = JSON.stringify({ origin, event });
      if (Buffer.byteLength(payload) > MAX_PAYLOAD) {
        log.error({ runId: event.runId, bytes: Buffer.byteLength(payload) }, "run event too large for NOTIFY; delivered in this process only");
        return;
      }
      // The change is committed already: a lost notification must not fail its publisher.
      try {
        await sql.notify(CHANNEL, payload);
      } catch (err) {
        log.error({ err, runId: event.runId }, "run event not sent to other instances");
      }
    },
    subscribe: (filter, signal) => hub.subscribe(filter, signal),
    async signal(topic) {
      if (!closed) await sql.notify(SIGNALS, JSON.stringify({ origin, topic }));
    },
    onSignal(topic, fn) {
      const set = signalled.get(topic) ?? new Set();
      signalled.set(topic, set);
      set.add(fn);
      return () => void set.delete(fn);
    },
    async close() {
      if (closed) return;
      closed = true;
      hub.closeAll();
      signalled.clear();
      // Bounded: a database that does not answer must not hold shutdown up (ending the client ends its LISTEN anyway).
      const unlistened = await settlesWithin(Promise.all([signals.unlisten(), listening.unlisten()]), UNLISTEN_MS);
      if (!unlistened) log.warn({ timeoutMs: UNLISTEN_MS }, "event bus: UNLISTEN got no answer at close; closing the connection instead");
      await sql.end({ timeout: PG_CLOSE_TIMEOUT_SECONDS });
    },
    get subscribers() {
      return hub.size;
    },
  };
}

function parseSignal(payload: string): { origin: string; topic: string } | null {
  try {
    const s = JSON.parse(payload) as { origin?: unknown; topic?: unknown };
    return typeof s?.origin === "string" && typeof s.topic === "string" ? { origin: s.origin, topic: s.topic } : null;
  } catch {
    return null;
  }
}

function parseEnvelope(payload: string, origin: string, log: Logger): RunEvent | null {
  let raw: unknown;
  try {
    raw = JSON.parse(payload);
  } catch {
    log.warn({ channel: CHANNEL }, "ignored a notification that is not JSON");
    return null;
  }
  const env = raw as { origin?: unknown; event?: unknown };
  if (env?.origin === origin) return null;
  const parsed = RunEventPayload.safeParse(env?.event);
  if (!parsed.success) {
    log.warn({ channel: CHANNEL }, "ignored a notification that is not a run event");
    return null;
  }
  const { missed: _missed, ...event } = parsed.data;
  return event;
}
