import type { WebClient } from "@slack/web-api";
import { excerpt, type Notifier, NotifySendError, SEND_TIMEOUT_MS } from "./port";

/** Slack platform errors that clear by themselves; any other (channel_not_found, not_in_channel, invalid_auth, ...) needs a person. */
const TRANSIENT_PLATFORM_ERRORS = new Set(["ratelimited", "fatal_error", "internal_error", "service_unavailable", "request_timeout"]);

/** @slack/web-api's ErrorCode values (the enum is not imported, so that the client loads only on the first send). */
const SLACK_ERRORS = {
  platform: "slack_webapi_platform_error",
  rateLimited: "slack_webapi_rate_limited_error",
  http: "slack_webapi_http_error",
} as const;

/**
 * SLACK through the Web API's chat.postMessage, one call per recipient
 * channel. The client's own retries are off (it would retry for about 30
 * minutes inside one job attempt) and rate-limited calls are refused at once:
 * the job queue retries with backoff instead. The client is loaded and built
 * on the first send.
 */
export function createSlackNotifier(settings: { token: string; apiUrl: string }): Notifier {
  let client: Promise<WebClient> | null = null;
  const open = () =>
    (client ??= import("@slack/web-api").then(
      (slack) =>
        new slack.WebClient(settings.token, {
          slackApiUrl: settings.apiUrl.endsWith("/") ? settings.apiUrl : `${settings.apiUrl}/`,
          retryConfig: { retries: 0 },
          rejectRateLimitedCalls: true,
          timeout: SEND_TIMEOUT_MS,
          logLevel: slack.LogLevel.ERROR,
        }),
    ));
  return {
    channel: "SLACK",
    async send(recipient, message) {
      try {
        const res = await (await open()).chat.postMessage({ channel: recipient, text: message.text, unfurl_links: false, unfurl_media: false });
        return { providerId: typeof res.ts === "string" ? res.ts : null };
      } catch (err) {
        throw classify(err);
      }
    },
  };
}

function classify(err: unknown): NotifySendError {
  const e = err as { code?: string; data?: { error?: string }; statusCode?: number; retryAfter?: number; message?: string };
  switch (e.code) {
    case SLACK_ERRORS.platform: {
      const code = e.data?.error ?? "unknown_error";
      return new NotifySendError(`Slack: ${code}`, TRANSIENT_PLATFORM_ERRORS.has(code), { cause: err });
    }
    case SLACK_ERRORS.rateLimited:
      return new NotifySendError(`Slack: rate limited (retry after ${e.retryAfter ?? "?"} s)`, true, { cause: err });
    case SLACK_ERRORS.http:
      return new NotifySendError(`Slack: HTTP ${e.statusCode ?? "?"}`, (e.statusCode ?? 500) >= 500 || e.statusCode === 408, { cause: err });
    default:
      // Request errors (connection refused, timeout) and anything unexpected.
      return new NotifySendError(`Slack: ${excerpt(e.message ?? String(err))}`, true, { cause: err });
  }
}
