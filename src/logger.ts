import pino from "pino";

export type Logger = pino.Logger;

/**
 * Structured JSON logs on stdout. Credentials never reach a log line: the
 * service logs ids and outcomes, never request bodies, and the redaction
 * below is a second guard for fields that might slip into an object.
 */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: undefined,
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
  });
}
