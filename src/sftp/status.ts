import { utils } from "ssh2";
import { type ErrorCode, isAppError } from "../domain/errors";
import { asUnavailable } from "../services/shared/unavailable";

const S = utils.sftp.STATUS_CODE;

/** The service's error codes as SFTP status codes: the SFTP transport's one table (as src/http/errors.ts is HTTP's). */
const STATUS: Record<ErrorCode, number> = {
  invalid_input: S.FAILURE,
  feature_not_enabled: S.PERMISSION_DENIED,
  unsupported_version: S.OP_UNSUPPORTED,
  unauthorized: S.PERMISSION_DENIED,
  forbidden: S.PERMISSION_DENIED,
  not_found: S.NO_SUCH_FILE,
  conflict: S.FAILURE,
  api_version_sunset: S.OP_UNSUPPORTED,
  payload_too_large: S.FAILURE,
  unsupported_media_type: S.FAILURE,
  rate_limited: S.FAILURE,
  // SFTP has no "try later"; the client is told why, and the connection stays up.
  unavailable: S.FAILURE,
  internal: S.FAILURE,
};

/** Status code and message for a failed request. Unexpected errors say only "internal error" to the client (the log has the rest). */
export function sftpStatus(e: unknown): { code: number; message: string; expected: boolean } {
  if (isAppError(e)) return { code: STATUS[e.code], message: e.message, expected: true };
  const unavailable = asUnavailable(e);
  if (unavailable) return { code: STATUS.unavailable, message: unavailable.message, expected: true };
  return { code: S.FAILURE, message: "internal error", expected: false };
}
