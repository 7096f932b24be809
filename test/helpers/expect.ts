import { expect } from "bun:test";
import type { Reply } from "./harness";

/** The standard error body, exactly: `{message, statusCode, error, requestId}`, with the status, code and (optionally) message expected. */
export function expectError(res: Reply, status: number, error: string, message?: string | RegExp) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body ?? {}).sort()).toEqual(["error", "message", "requestId", "statusCode"]);
  expect(res.body.requestId).toBe(res.headers.get("x-request-id"));
  expect(res.body.statusCode).toBe(status);
  expect(res.body.error).toBe(error);
  expect(typeof res.body.message).toBe("string");
  if (message !== undefined) expect(res.body.message).toMatch(message);
}
