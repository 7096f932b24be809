import { sseMessages } from "./events";

/**
 * The browser's `EventSource`, as far as @trpc/client's `httpSubscriptionLink`
 * uses it, for a test runtime that has none (Bun). Like a browser's it can set
 * no request headers: whatever a client sends must be in the URL. It does not
 * reconnect: a failed or ended stream is reported as `error` and closed.
 */
export class FetchEventSource extends EventTarget {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSED = 2;
  readonly CONNECTING = 0;
  readonly OPEN = 1;
  readonly CLOSED = 2;
  readyState = 0;
  readonly url: string;
  readonly withCredentials = false;
  /** Every URL any instance opened, for tests that check what went over the wire. */
  static readonly opened: string[] = [];
  private readonly abort = new AbortController();

  constructor(url: string | URL) {
    super();
    this.url = String(url);
    FetchEventSource.opened.push(this.url);
    void this.run();
  }

  close(): void {
    this.readyState = this.CLOSED;
    this.abort.abort();
  }

  private async run(): Promise<void> {
    try {
      const res = await fetch(this.url, { headers: { accept: "text/event-stream" }, signal: this.abort.signal });
      if (res.status !== 200 || !res.headers.get("content-type")?.includes("text/event-stream") || !res.body) {
        await res.body?.cancel();
        this.fail();
        return;
      }
      this.readyState = this.OPEN;
      this.dispatchEvent(new Event("open"));
      for await (const m of sseMessages(res.body)) {
        if (this.readyState === this.CLOSED) return;
        this.dispatchEvent(new MessageEvent(m.event, { data: m.data, lastEventId: m.id ?? "" }));
      }
      this.fail();
    } catch {
      if (this.readyState !== this.CLOSED) this.fail();
    }
  }

  private fail(): void {
    if (this.readyState === this.CLOSED) return;
    this.readyState = this.CLOSED;
    this.dispatchEvent(new Event("error"));
  }
}
