/**
 * Counts the event streams (GraphQL and tRPC subscriptions over SSE) a server
 * has open, so that a graceful stop can wait for the other requests in flight
 * only: a subscription never ends by itself, an upload does.
 */
export function openStreams() {
  let open = 0;
  return {
    get open(): number {
      return open;
    },
    /** `next`'s answer; an event stream is counted until it ends or its client goes away. Any other request is passed on as it is. */
    track(request: Request, next: (request: Request) => Response | Promise<Response>): Response | Promise<Response> {
      if (!request.headers.get("accept")?.includes("text/event-stream")) return next(request);
      return stream(request, next);
    },
  };

  async function stream(request: Request, next: (request: Request) => Response | Promise<Response>): Promise<Response> {
    const res = await next(request);
    if (!res.body || !res.headers.get("content-type")?.includes("text/event-stream")) return res;
    open++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      open--;
    };
    // Bun aborts the request's signal when the client leaves before the answer ends; flush runs when the server ends it.
    request.signal.addEventListener("abort", end, { once: true });
    const body = res.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({ flush: end }));
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
}
