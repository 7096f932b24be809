import { connect, type Socket } from "node:net";

/**
 * A bound on how long a query waits for a database that has gone silent.
 *
 * A refused or reset connection fails at once, but a connection that stays
 * open while nothing comes back (a stalled network, a hung proxy or pooler)
 * would keep its query, and the request behind it, waiting for the
 * operating system's TCP timeouts: many minutes. So the service's
 * postgres.js client opens its connections through `silenceBound(ms)` (its
 * `socket` option): once a query has been written, if the database sends
 * nothing at all for `ms`, the socket is destroyed with an `ETIMEDOUT`
 * error. postgres.js then fails the queries of that connection, the request
 * answers 503 with Retry-After (db/errors.ts counts ETIMEDOUT as
 * unavailable), and the next query opens a new connection.
 *
 * What counts as waiting: bytes written since the last answer that ended
 * with ReadyForQuery (postgres.js ends every query with Sync or a simple
 * Query, each answered by one). Any byte received restarts the clock, so a
 * query that streams many rows is never cut; only silence is. An idle
 * connection (LISTEN included) is never cut. Migrations take their lock and
 * run on a client of their own without the bound (db/open-postgres.ts):
 * waiting for another instance's migration is not silence to cut.
 *
 * Destroying the socket ends the server's side too once the network carries
 * it again; a transaction not committed is then rolled back by Postgres. As
 * with any lost connection, a COMMIT the server received before the silence
 * may have taken effect: `Idempotency-Key` makes a retried write safe.
 */
export const DEFAULT_SILENCE_MS = 5_000;

/** ReadyForQuery: 'Z', length 5, a status byte. */
const READY = [0x5a, 0, 0, 0, 5];

interface Watched {
  socket: Socket;
  ms: number;
  /** Written since the last ReadyForQuery that ended an answer. */
  waiting: boolean;
  /** The last byte written or received while waiting, ms (performance.now). */
  since: number;
  /** The last 6 bytes received, to find a ReadyForQuery split over two chunks. */
  tail: Uint8Array;
}

const watched = new Set<Watched>();
/** How often silences are checked: a stalled query fails within its bound plus this. */
const TICK_MS = 250;
let ticker: ReturnType<typeof setInterval> | null = null;

/** The last 6 bytes received, after `chunk`: a view of the chunk itself when it holds them (the usual case: no copy). */
function lastSix(tail: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (chunk.length >= 6) return chunk.subarray(chunk.length - 6);
  const joined = new Uint8Array(Math.min(6, tail.length + chunk.length));
  const fromTail = joined.length - chunk.length;
  joined.set(tail.subarray(tail.length - fromTail), 0);
  joined.set(chunk, fromTail);
  return joined;
}

function isReady(last6: Uint8Array): boolean {
  return last6.length === 6 && READY.every((b, i) => last6[i] === b);
}

function tick(): void {
  const now = performance.now();
  for (const w of watched) {
    if (!w.waiting || now - w.since < w.ms) continue;
    watched.delete(w);
    const err = Object.assign(new Error(`the database sent nothing for ${w.ms / 1000} s while a query waited (a stalled connection)`), { code: "ETIMEDOUT" });
    w.socket.destroy(err);
  }
  if (watched.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = null;
  }
}

/** Watches `socket` as described above; returns it. */
export function watchSilence(socket: Socket, ms: number): Socket {
  const w: Watched = { socket, ms, waiting: false, since: 0, tail: new Uint8Array(0) };
  watched.add(w);
  if (!ticker) {
    ticker = setInterval(tick, TICK_MS);
    ticker.unref();
  }
  const write = socket.write;
  socket.write = function (this: Socket, ...args: unknown[]): boolean {
    if (!w.waiting) w.since = performance.now();
    w.waiting = true;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as Socket["write"];
  socket.on("data", (chunk: Uint8Array) => {
    w.since = performance.now();
    w.tail = lastSix(w.tail, chunk);
    if (isReady(w.tail)) w.waiting = false;
  });
  socket.once("close", () => watched.delete(w));
  return socket;
}

/**
 * postgres.js's `socket` option: the connection it would open itself (the
 * URL's first host, or its Unix socket), watched for silence. postgres.js
 * keeps its connect timeout and keep-alive (it starts the protocol on the
 * socket returned; writes wait for the connect). With TLS (`sslmode` in the
 * URL) postgres.js wraps the socket and its bytes are encrypted here, so the
 * connection is not watched.
 */
export function silenceBound(ms: number): (options: { host: string[]; port: number[]; path?: string; ssl?: unknown }) => Socket {
  return (options) => {
    const host = options.host[0] ?? "localhost";
    const port = Number(options.port[0] ?? 5432);
    const socket = options.path ? connect(options.path) : connect(port, host);
    // postgres.js names these in its connection errors.
    Object.assign(socket, { host, port });
    return options.ssl ? socket : watchSilence(socket, ms);
  };
}
