import { GraphQLError } from "graphql";
import { type AppError, type ErrorCode, isAppError, UNAVAILABLE_RETRY_AFTER_SECONDS } from "../src/domain/errors";
import { currentRequestId } from "../src/domain/request-context";
import { asUnavailable } from "../src/services/shared/unavailable";
import { HTTP_STATUS } from "../src/transport/status";
import type { Logger } from "../src/logger";

/** The GraphQL transport's one table from error code to `extensions.code`. */
export const GRAPHQL_CODE: Record<ErrorCode, string> = {
  invalid_input: "BAD_USER_INPUT",
  feature_not_enabled: "FEATURE_NOT_ENABLED",
  unsupported_version: "BAD_REQUEST",
  unauthorized: "UNAUTHENTICATED",
  forbidden: "FORBIDDEN",
  not_found: "NOT_FOUND",
  conflict: "CONFLICT",
  api_version_sunset: "API_VERSION_SUNSET",
  payload_too_large: "PAYLOAD_TOO_LARGE",
  unsupported_media_type: "UNSUPPORTED_MEDIA_TYPE",
  rate_limited: "RATE_LIMITED",
  unavailable: "SERVICE_UNAVAILABLE",
  internal: "INTERNAL_SERVER_ERROR",
};

export function extensionsOf(e: AppError) {
  const base = { ...e.details, code: GRAPHQL_CODE[e.code], error: e.code, statusCode: HTTP_STATUS[e.code], requestId: currentRequestId() };
  // Yoga answers with this status and header (the database is down: 503, try again later).
  if (e.code === "unavailable") {
    return { ...base, http: { status: HTTP_STATUS.unavailable, headers: { "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) } } };
  }
  return base;
}

/** Yoga's error mask: service errors keep their message and code; anything else is logged and hidden. */
export function maskError(log: Logger) {
  return (error: unknown): Error => {
    const gql = error instanceof GraphQLError ? error : null;
    // graphql-js wraps its own errors (e.g. a variable that does not fit its input type) in another GraphQLError.
    let original: unknown = error;
    while (original instanceof GraphQLError && original.originalError) original = original.originalError;
    const unavailable = isAppError(original) ? null : asUnavailable(original);
    if (unavailable) original = unavailable;
    if (isAppError(original)) {
      return new GraphQLError(original.message, { nodes: gql?.nodes, path: gql?.path, extensions: extensionsOf(original) });
    }
    if (original instanceof GraphQLError) {
      // graphql-js's and Yoga's own errors are safe to show. Those without a code are about the request's input
      // (variables); so are those Yoga answers 400 (no query, unparsable document, failed validation).
      const g = gql ?? original;
      const http = g.extensions.http as { status?: number; spec?: boolean } | undefined;
      if (g.extensions.code && (g.extensions.error || (http?.status ?? 0) !== HTTP_STATUS.invalid_input)) {
        return new GraphQLError(g.message, { nodes: g.nodes, source: g.source, positions: g.positions, path: g.path, originalError: g.originalError, extensions: { ...g.extensions, requestId: currentRequestId() } });
      }
      const extensions = {
        ...g.extensions,
        requestId: currentRequestId(),
        code: g.extensions.code ?? GRAPHQL_CODE.invalid_input,
        error: "invalid_input",
        statusCode: HTTP_STATUS.invalid_input,
        // A refused request is a 400 whatever the Accept header; Yoga would answer `spec` errors 200 to application/json.
        ...(http ? { http: { ...http, spec: false, status: HTTP_STATUS.invalid_input } } : {}),
      };
      return new GraphQLError(g.message, { nodes: g.nodes, source: g.source, positions: g.positions, path: g.path, extensions });
    }
    const ref = crypto.randomUUID();
    log.error({ err: original, ref }, "unhandled error in GraphQL resolver");
    return new GraphQLError(`internal error (reference ${ref})`, {
      nodes: gql?.nodes,
      path: gql?.path,
      extensions: { code: GRAPHQL_CODE.internal, error: "internal", statusCode: 500, requestId: currentRequestId() },
    });
  };
}
