import postgres from "postgres";
import type { Logger } from "../../logger";
import { DEFAULT_BUFFER, Hub } from "./hub";
import type { EventBus, RunEvent } from "./port";
import { RunEventPayload } from "./shapes";

/** The channel every instance on one database listens on (NOTIFY is scoped to the database). */
export const CHANNEL = "fps_run_events";
/** Postgres refuses NOTIFY payloads of 8000 bytes or more. */
const MAX_PAYLOAD = 7999;

/**
 * Several instances on one Postgres: an event goes to this process's
 * subscribers at once and to the other instances through NOTIFY on a
 * dedicated connection. The envelope names the sending instance so that it
 * ignores its own notification instead of delivering twice. postgres.js
 * keeps the LISTEN connection open and listens again after a reconnect;
 * notifications sent while it was down are lost (events are live hints,
 * the runs themselves are the record).
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
    async close() {
      if (closed) return;
      closed = true;
      hub.closeAll();
      await listening.unlisten().catch(() => {});
      await sql.end({ timeout: 5 });
    },
    get subscribers() {
      return hub.size;
    },
  };
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
