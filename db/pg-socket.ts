import { connect, type Socket } from "node:net";

/**
 * The TCP socket of every postgres.js connection (its `socket` option), with
 * one change: when the socket fails, postgres.js hears of the close at once,
 * in the same turn as the error.
 *
 * postgres.js (3.4.x) fails the queries in flight on a socket's `error` and
 * forgets the connection on its `close`. Bun emits `close` some milliseconds
 * after `error`; a connection that was idle stays in the pool's open list
 * meanwhile, so a query sent then is written to the dead socket (or left in
 * its write buffer), and on `close` with an error postgres.js fails nothing
 * more: that query's promise never settles. Found by resetting connections
 * through a proxy: an upload request then waited until its client gave up
 * (60 s), and the fault harness's recovery took 57 s instead of about 1.
 * Emitting `close` right after `error` leaves no such window.
 *
 * Connection timeouts, keep-alive and TLS stay postgres.js's own (it calls
 * `connected()` on the socket returned here; writes wait for the connect).
 * Only the URL's first host is used (the service names one).
 */
export function pgSocket(options: { host: string[]; port: number[]; path?: string }): Socket {
  const host = options.host[0] ?? "localhost";
  const port = Number(options.port[0] ?? 5432);
  const socket = options.path ? connect(options.path) : connect(port, host);
  // postgres.js names these in its connection errors (`write CONNECTION_CLOSED host:port`).
  Object.assign(socket, { host, port });
  const emit = socket.emit;
  let closed = false;
  socket.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "close") {
      if (closed) return false;
      closed = true;
      return emit.call(this, event, ...args);
    }
    if (event !== "error") return emit.call(this, event, ...args);
    const handled = emit.call(this, event, ...args);
    if (!closed) {
      closed = true;
      emit.call(this, "close", true);
      this.destroy();
    }
    return handled;
  } as Socket["emit"];
  return socket;
}

/** postgres.js options with `socket: pgSocket` (an option its types do not declare). */
export function withPgSocket<T extends object>(options: T): T {
  return { ...options, socket: pgSocket };
}
