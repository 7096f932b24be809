/**
 * A local webhook receiver (Bun.serve on 127.0.0.1) that records every
 * request and answers as the test tells it: a status, headers, a delay, or
 * nothing at all (the port closed).
 */
export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Wall-clock ms when the request arrived. */
  at: number;
}

export type Answer = { status?: number; headers?: Record<string, string>; body?: string; delayMs?: number };

export class Receiver {
  readonly received: Received[] = [];
  private server: ReturnType<typeof Bun.serve> | null = null;
  /** Decides each answer; by default 200 "ok". */
  answer: (req: Received, n: number) => Answer = () => ({ status: 200, body: "ok" });

  private constructor(public port: number) {}

  static async start(port = 0): Promise<Receiver> {
    const r = new Receiver(port);
    r.up();
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** (Re)opens the port. */
  up(): void {
    this.server = Bun.serve({
      port: this.port,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        const rec: Received = {
          method: req.method,
          path: new URL(req.url).pathname,
          headers: Object.fromEntries(req.headers.entries()),
          body: await req.text(),
          at: Date.now(),
        };
        this.received.push(rec);
        const a = this.answer(rec, this.received.length);
        if (a.delayMs) await Bun.sleep(a.delayMs);
        return new Response(a.body ?? "", { status: a.status ?? 200, headers: a.headers });
      },
    });
    this.port = this.server.port!;
  }

  /** Closes the port: connections are refused until up(). */
  down(): void {
    this.server?.stop(true);
    this.server = null;
  }

  stop(): void {
    this.down();
  }
}
