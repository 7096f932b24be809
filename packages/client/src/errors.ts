/** The service's error body: `message`, `statusCode`, `error` (a closed code), and the request id when the service sends one. */
export interface ErrorBody {
  message: string;
  statusCode: number;
  error: string;
  requestId?: string;
  [k: string]: unknown;
}

/** Every failed call throws this: the service's answer, typed, with the request id to quote to an operator. */
export class FpsError extends Error {
  readonly statusCode: number;
  readonly error: string;
  readonly requestId: string | undefined;
  readonly body: unknown;
  /** Seconds the service asked to wait (Retry-After), when it said. */
  readonly retryAfter: number | undefined;

  constructor(init: { statusCode: number; error: string; message: string; requestId?: string; body?: unknown; retryAfter?: number }) {
    super(init.message);
    this.name = "FpsError";
    this.statusCode = init.statusCode;
    this.error = init.error;
    this.requestId = init.requestId;
    this.body = init.body;
    this.retryAfter = init.retryAfter;
  }

  /** From a response that was not 2xx (its body already read as `body`). */
  static from(res: Response, body: unknown): FpsError {
    const b = (body && typeof body === "object" ? body : {}) as Partial<ErrorBody>;
    const requestId = typeof b.requestId === "string" ? b.requestId : (res.headers.get("x-request-id") ?? undefined);
    return new FpsError({
      statusCode: res.status,
      error: typeof b.error === "string" ? b.error : res.status >= 500 ? "internal_error" : "http_error",
      message: typeof b.message === "string" ? b.message : `${res.status} ${res.statusText || "error"}`,
      requestId,
      body,
      retryAfter: retryAfterSeconds(res.headers.get("retry-after")),
    });
  }
}

/** A network failure (no answer at all), kept apart from the service's own errors. */
export class FpsNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FpsNetworkError";
  }
}

/** `Retry-After` as seconds: a number of seconds or an HTTP date. */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (!value) return undefined;
  const n = Number(value);
  if (Number.isFinite(n) && n >= 0) return n;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
