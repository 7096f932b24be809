import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { WebhookRequest, WebhookResponse, WebhookSender } from "./port";

/**
 * Sends with node:http / node:https rather than fetch: their `lookup` option
 * lets the connection go to the address the service checked, while the URL's
 * host stays the Host header and the TLS server name (certificates are
 * verified against the name, as for any client). Keep-alive agents reuse
 * connections to busy receivers.
 */
export function createHttpSender(opts: { maxSockets?: number; /** Extra trusted CA certificates (PEM), e.g. a private PKI. */ ca?: string } = {}): WebhookSender {
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64 }),
    https: new https.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64, ...(opts.ca ? { ca: opts.ca } : {}) }),
  };
  return {
    send: (req) => send(req, agents),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

function send(req: WebhookRequest, agents: { http: http.Agent; https: https.Agent }): Promise<WebhookResponse> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const pinned: LookupFunction = (_host, options, callback) => {
    const { address, family } = req.address;
    if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const isHttps = req.url.protocol === "https:";
  return new Promise<WebhookResponse>((resolve) => {
    let settled = false;
    const finish = (r: WebhookResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
      resolve(r);
    };
    const fail = (error: string, extra: { timedOut?: boolean; aborted?: boolean } = {}) =>
      finish({ ok: false, error, timedOut: extra.timedOut ?? false, aborted: extra.aborted ?? false, durationMs: elapsed() });

    const request = (isHttps ? https : http).request(
      req.url,
      {
        method: "POST",
        headers: { ...req.headers, "content-length": String(Buffer.byteLength(req.body)) },
        lookup: pinned,
        agent: isHttps ? agents.https : agents.http,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () => {
          const excerpt = Buffer.concat(chunks).subarray(0, req.excerptBytes).toString("utf8");
          const retryAfter = res.headers["retry-after"];
          finish({ ok: true, statusCode: res.statusCode ?? 0, retryAfter: typeof retryAfter === "string" ? retryAfter : null, excerpt, durationMs: elapsed() });
        };
        res.on("data", (chunk: Buffer) => {
          if (kept < req.excerptBytes) {
            chunks.push(chunk);
            kept += chunk.length;
          }
          // Enough kept: the rest of a large answer is not waited for.
          if (kept >= req.excerptBytes) {
            done();
            res.destroy();
          }
        });
        res.on("end", done);
        res.on("error", done);
      },
    );
    const timer = setTimeout(() => {
      fail(`timed out after ${req.timeoutMs} ms`, { timedOut: true });
      request.destroy();
    }, req.timeoutMs);
    const onAbort = () => {
      fail("aborted: the service is stopping", { aborted: true });
      request.destroy();
    };
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    request.on("error", (e: NodeJS.ErrnoException) => fail(describeError(e)));
    request.end(req.body);
  });
}

function describeError(e: NodeJS.ErrnoException): string {
  const code = e.code ? `${e.code}: ` : "";
  return `${code}${e.message}`.slice(0, 500);
}
