/**
 * The one error type services throw. The code is from a closed list; each
 * transport maps codes to its own vocabulary in exactly one table
 * (src/http/errors.ts, trpc/errors.ts, graphql/errors.ts).
 */
export const ERROR_CODES = [
  "invalid_input",
  "feature_not_enabled",
  "unsupported_version",
  "unauthorized",
  "forbidden",
  "not_found",
  "conflict",
  "api_version_sunset",
  "payload_too_large",
  "unsupported_media_type",
  "rate_limited",
  "unavailable",
  "internal",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class AppError extends Error {
  override readonly name = "AppError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra members merged into the error body (e.g. `migration_url`). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/**
 * `unavailable`: a dependency the request needs (the database) does not
 * answer; the caller may try again after this many seconds (`Retry-After`
 * on every transport).
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

export const notFound = (what: string, id: string) => new AppError("not_found", `${what} '${id}' not found`);
