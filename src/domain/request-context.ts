import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The HTTP request being served, for whatever runs on its behalf: log lines
 * (src/logger.ts), error bodies on every surface, the run it starts, and
 * the audit record. Set once per request by the HTTP app (src/http/observe.ts);
 * outside a request (jobs, SFTP, SMTP) there is none.
 */
export interface RequestScope {
  readonly requestId: string;
  /** The matched route template, once routing knows it (for metrics: never the path itself). */
  route?: string;
}

const scope = new AsyncLocalStorage<RequestScope>();

/** The id of the HTTP request being served, or undefined outside one. */
export function currentRequestId(): string | undefined {
  return scope.getStore()?.requestId;
}

export function currentRequestScope(): RequestScope | undefined {
  return scope.getStore();
}

export function runInRequest<T, A extends unknown[]>(s: RequestScope, fn: (...args: A) => T, ...args: A): T {
  return scope.run(s, fn, ...args);
}

/** Work that outlives the request that set it off (a job, a timer loop) must not carry its id. */
export function runOutsideRequest<T>(fn: () => T): T {
  return scope.exit(fn);
}

/** At most 128 visible ASCII characters (no spaces, no controls). */
const WELL_FORMED = /^[\x21-\x7e]{1,128}$/;

/** New ids: 64 random bits drawn once per process (unique across instances and restarts), then a counter: cheap on every request. */
const PROCESS_PART = Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex");
let sequence = 0;

/** The client's own id when it is well formed, else a new one (`req_`, 16 hex digits for the process, 8 or more for the request). */
export function requestIdFor(header: string | null): string {
  if (header !== null && WELL_FORMED.test(header)) return header;
  return `req_${PROCESS_PART}${(++sequence).toString(16).padStart(8, "0")}`;
}
