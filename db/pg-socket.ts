import { connect, type Socket } from "node:net";

/**
 * The TCP socket of every postgres.js connection (its `socket` option),
 * changed so that no query sent while the connection fails is left waiting.
 *
 * postgres.js (3.4.x) fails the queries in flight on a socket's `error`, and
 * forgets the connection on its `close`; when that close follows an error it
 * fails nothing more. Bun emits `close` a little after `error`, and a
 * connection stays in the pool meanwhile: a query sent in that gap (by the
 * pool, or a transaction's `rollback` after its query failed) is written to
 * a dead socket, which drops it, and its promise never settles. Resetting
 * connections through a proxy showed it: an upload request waited until its
 * client gave up.
 *
 * So, once the socket has failed:
 * - a write is not made: the failure is reported again (as `error`, on the
 *   next tick), and postgres.js fails what it has sent, that query included;
 * - `close` is held back until a whole turn of the event loop passes without
 *   a write, so every query that postgres.js hands this connection before it
 *   lets go of it is failed by the step above. (Passing `close` on at once,
 *   in the error's own turn, was tried: a rollback written after it found
 *   postgres.js's socket gone, a TypeError that ended the process.)
 *
 * Connection timeouts, keep-alive and TLS stay postgres.js's own (it calls
 * `connected()` on the socket returned here; writes wait for the connect).
 * Only the URL's first host is used (the service names one). With TLS,
 * postgres.js wraps this socket and listens to the wrapper, which this does
 * not change.
 */
export function pgSocket(options: { host: string[]; port: number[]; path?: string }): Socket {
  const host = options.host[0] ?? "localhost";
  const port = Number(options.port[0] ?? 5432);
  const socket = options.path ? connect(options.path) : connect(port, host);
  // postgres.js names these in its connection errors (`write CONNECTION_CLOSED host:port`).
  Object.assign(socket, { host, port });
  return failFast(socket);
}

/** At most this many turns wait for writes to stop before `close` is passed on regardless. */
const MAX_TURNS = 1_000;

/** The change described above, on an existing socket. */
export function failFast(socket: Socket): Socket {
  const emit = socket.emit;
  const write = socket.write;
  let failure: Error | null = null;
  let heldClose: unknown[] | null = null;
  let wrote = false;
  let turns = 0;
  let checking = false;

  const release = () => {
    if (wrote && turns++ < MAX_TURNS) {
      wrote = false;
      setImmediate(release);
      return;
    }
    checking = false;
    const args = heldClose!;
    heldClose = null;
    emit.call(socket, "close", ...args);
  };

  socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "error" && !failure) failure = args[0] instanceof Error ? args[0] : new Error(String(args[0]));
    if (event === "close" && failure) {
      if (heldClose || checking) return false;
      heldClose = args;
      checking = true;
      wrote = false;
      setImmediate(release);
      return true;
    }
    return emit.call(this, event, ...args);
  } as Socket["emit"];

  socket.write = function (this: Socket, ...args: unknown[]): boolean {
    if (!failure) return (write as (...a: unknown[]) => boolean).apply(this, args);
    wrote = true;
    const err = failure;
    const callback = args.find((a) => typeof a === "function") as ((e: Error) => void) | undefined;
    process.nextTick(() => {
      callback?.(err);
      // Listeners are gone once postgres.js has let go of the connection: then nothing waits for this.
      if (socket.listenerCount("error") > 0) emit.call(socket, "error", err);
    });
    return false;
  } as Socket["write"];

  return socket;
}

/** postgres.js options with `socket: pgSocket`. */
export function withPgSocket<T extends object>(options: T): T & { socket: never } {
  // postgres.js types `socket` as returning its own socket type; a node:net Socket is what it uses.
  return { ...options, socket: pgSocket as never };
}
