import type { ErrorCode } from "../domain/errors";

/**
 * The HTTP status of each error code, for every surface served over HTTP:
 * REST answers with it, GraphQL and tRPC answer with it and carry it as
 * `statusCode`. Each transport still maps an AppError its own way, in its
 * own table (REST's error body in src/http/errors.ts, `extensions.code` in
 * graphql/errors.ts, tRPC's codes in trpc/errors.ts, SFTP's in src/sftp/status.ts).
 */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  invalid_input: 400,
  feature_not_enabled: 400,
  unsupported_version: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  api_version_sunset: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
};
