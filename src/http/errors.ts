import { AppError, type ErrorCode, isAppError } from "../domain/errors";
import { HTTP_STATUS } from "../transport/status";
import { currentRequestId } from "../domain/request-context";
import type { Logger } from "../logger";
import { asUnavailable } from "../services/shared/unavailable";

/** The REST transport's one error table: an AppError as the body of its answer (with its HTTP status, src/transport/status.ts). */
export interface ErrorBody {
  message: string;
  statusCode: number;
  error: ErrorCode;
  [extra: string]: unknown;
}

export function errorBody(e: AppError): ErrorBody {
  return { ...e.details, message: e.message, statusCode: HTTP_STATUS[e.code], error: e.code, requestId: currentRequestId() };
}

/**
 * Turns anything thrown while handling a request into an AppError: the
 * framework's own errors (no route, unparsable body) get their codes here,
 * and anything unexpected is logged and answered without internals.
 */
export function toAppError(e: unknown, opts: { frameworkCode?: string | number; method: string; path: string; log: Logger }): AppError {
  if (isAppError(e)) return e;
  switch (opts.frameworkCode) {
    case "NOT_FOUND":
      return new AppError("not_found", `no route ${opts.method} ${opts.path}`);
    case "PARSE":
      return new AppError("invalid_input", "body: could not be parsed; send JSON with content-type application/json");
    case "VALIDATION":
      return new AppError("invalid_input", (e as Error).message);
  }
  const unavailable = asUnavailable(e);
  if (unavailable) {
    opts.log.warn({ err: e, method: opts.method, path: opts.path }, "database unavailable");
    return unavailable;
  }
  const ref = crypto.randomUUID();
  opts.log.error({ err: e, ref, method: opts.method, path: opts.path }, "unhandled error");
  return new AppError("internal", `internal error (reference ${ref})`);
}
