import pino from "pino";
import { currentRequestId } from "./domain/request-context";

export type Logger = pino.Logger;

/**
 * Structured JSON logs on stdout. Credentials never reach a log line: the
 * service logs ids and outcomes, never request bodies, and the redaction
 * below is a second guard for fields that might slip into an object.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: undefined,
    // Every line written while an HTTP request is served names it (src/domain/request-context.ts).
    mixin() {
      const requestId = currentRequestId();
      return requestId === undefined ? {} : { requestId };
    },
    redact: {
      paths: [
        "*.sftpPassword",
        "*.sftpPrivateKey",
        "*.pgpPrivateKey",
        "*.pgpPassphrase",
        "*.sftpPassphrase",
        "*.awsPassword",
        "*.apiKey",
        "*.secret",
        "headers['x-api-key']",
      ],
      censor: "[redacted]",
    },
  }, destination);
}
