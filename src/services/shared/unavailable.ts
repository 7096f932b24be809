import { isDatabaseUnavailable } from "../../../db/client";
import { AppError } from "../../domain/errors";

/**
 * The one place that tells a database outage from a bug: each transport's
 * error table calls this for an error that is not an AppError, and answers
 * `unavailable` (503 with Retry-After) instead of a 500.
 */
export function asUnavailable(e: unknown): AppError | null {
  if (!isDatabaseUnavailable(e)) return null;
  return new AppError("unavailable", "the database is unavailable; try again shortly (see Retry-After)");
}
