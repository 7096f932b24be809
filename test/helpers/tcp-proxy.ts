import { connect, createServer, type Server, type Socket } from "node:net";

export type ProxyMode = "pass" | "refuse" | "stall";

/**
 * A TCP proxy between the service and Postgres that can fail the way a
 * network does (Jepsen-style): `refuse()` drops live connections and refuses
 * new ones, `reset()` drops live connections once, `stall()` keeps every
 * connection open but forwards nothing, `resetOn(text)` resets the connection
 * that sends `text`, `restore()` passes traffic again.
 * Used by the fault tests and bench/faults.ts.
 */
export class TcpProxy {
  private mode: ProxyMode = "pass";
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private readonly held: (() => void)[] = [];
  /** `resetOn`: the next connection whose client sends these bytes is reset there. */
  private trap: { needle: Buffer; sprung: () => void } | null = null;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy!: TcpProxy;
    const server = createServer((client) => proxy.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (!address || typeof address === "string") throw new Error("proxy has no port");
    proxy = new TcpProxy(server, address.port);
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  get connections(): number {
    return this.pairs.size;
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    client.on("error", () => {});
    if (this.mode === "refuse") {
      client.resetAndDestroy();
      return;
    }
    const open = () => {
      if (client.destroyed) return;
      const upstream = connect(target.port, target.host);
      const pair = { client, upstream };
      this.pairs.add(pair);
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      const forward = (from: Socket, to: Socket) =>
        from.on("data", (chunk) => {
          if (from === client && this.trap && Buffer.from(chunk).includes(this.trap.needle)) {
            const { sprung } = this.trap;
            this.trap = null;
            client.resetAndDestroy();
            upstream.destroy();
            sprung();
            return;
          }
          if (this.mode === "stall") {
            from.pause();
            this.held.push(() => {
              to.write(chunk);
              from.resume();
            });
          } else to.write(chunk);
        });
      forward(client, upstream);
      forward(upstream, client);
      const close = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on("close", close);
      upstream.on("close", close);
    };
    if (this.mode === "stall") this.held.push(open);
    else open();
  }

  /** Drops every live connection (a reset) and refuses new ones until `restore()`. */
  refuse(): void {
    this.mode = "refuse";
    this.dropAll();
  }

  /** Drops every live connection once; new ones are accepted. */
  reset(): void {
    this.dropAll();
  }

  /** Resets the next connection that sends `text` (before forwarding it); resolves once it did. */
  resetOn(text: string): Promise<void> {
    return new Promise((sprung) => (this.trap = { needle: Buffer.from(text), sprung }));
  }

  /** Forwards nothing (connections stay open, bytes wait) until `restore()`. */
  stall(): void {
    this.mode = "stall";
  }

  restore(): void {
    this.mode = "pass";
    for (const go of this.held.splice(0)) go();
  }

  private dropAll(): void {
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.restore();
    this.dropAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
