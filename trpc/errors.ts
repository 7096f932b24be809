import { TRPCError } from "@trpc/server";
import type { TRPC_ERROR_CODE_KEY } from "@trpc/server/rpc";
import type { ErrorCode } from "../src/domain/errors";

/** The tRPC transport's one table from error code to tRPC error code. */
export const TRPC_CODE: Record<ErrorCode, TRPC_ERROR_CODE_KEY> = {
  invalid_input: "BAD_REQUEST",
  feature_not_enabled: "BAD_REQUEST",
  unsupported_version: "BAD_REQUEST",
  unauthorized: "UNAUTHORIZED",
  forbidden: "FORBIDDEN",
  not_found: "NOT_FOUND",
  conflict: "CONFLICT",
  api_version_sunset: "PRECONDITION_FAILED",
  payload_too_large: "PAYLOAD_TOO_LARGE",
  unsupported_media_type: "UNSUPPORTED_MEDIA_TYPE",
  rate_limited: "TOO_MANY_REQUESTS",
  unavailable: "SERVICE_UNAVAILABLE",
  internal: "INTERNAL_SERVER_ERROR",
};

export { TRPCError };
