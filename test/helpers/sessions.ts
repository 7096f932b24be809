import type { Harness } from "./harness";

/** The dashboard's origin in tests (the harness's PUBLIC_URL). */
export const ORIGIN = "http://localhost:3000";

export interface SessionCall {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tRPC answers are checked member by member
  body: any;
  /** The session token a `set-cookie` answer carries, if any. */
  cookie: string | null;
  setCookie: string | null;
}

export interface SessionCallOptions {
  input?: unknown;
  cookie?: string | null;
  /** Sent on mutations; null sends none. */
  origin?: string | null;
  query?: boolean;
  key?: string;
  headers?: Record<string, string>;
}

/** A tRPC call over HTTP as the dashboard makes it: the session cookie, and the Origin on mutations. */
export async function sessionCall(h: Harness, path: string, opts: SessionCallOptions = {}): Promise<SessionCall> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = `fps_session=${opts.cookie}`;
  if (opts.key) headers["x-api-key"] = opts.key;
  const res = opts.query
    ? await h.request("GET", `/trpc/${path}${opts.input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(opts.input))}`}`, { headers })
    : await h.request("POST", `/trpc/${path}`, {
        headers: { ...headers, ...(opts.origin === null ? {} : { origin: opts.origin ?? ORIGIN }) },
        body: opts.input ?? {},
      });
  const setCookie = res.headers.get("set-cookie");
  const m = setCookie ? /fps_session=([^;]*)/.exec(setCookie) : null;
  return { status: res.status, body: res.body, cookie: m ? m[1]! : null, setCookie };
}
