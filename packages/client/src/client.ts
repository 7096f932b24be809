import createClient, { type Client, type Middleware } from "openapi-fetch";
import { FpsError } from "./errors.js";
import { retryingFetch, type RetryOptions } from "./retry.js";
import type { components, paths } from "./schema.js";

export type { components, paths };
export type Schemas = components["schemas"];
export type PipelineRun = Schemas["PipelineRun"];

/** The newest API version; the client sends it unless told otherwise. */
export const LATEST_VERSION = "2026-05-25";

export interface FpsClientOptions {
  /** Where the service answers, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** Sent as `x-api-key` on every call. */
  apiKey: string;
  /** `Service-Version` on every call (default: the newest). */
  version?: string;
  /** Retries of 429, 503 and network errors for safe and idempotent calls (`{ retries: 0 }`: none). */
  retry?: RetryOptions;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** Extra headers on every call. */
  headers?: Record<string, string>;
}

export interface Core {
  readonly baseUrl: string;
  readonly version: string;
  /** Every REST route, typed from the service's OpenAPI document; a failed call throws `FpsError`. */
  readonly api: Client<paths>;
  /** The headers every call carries (key, version, extras). */
  headers(extra?: Record<string, string>): Headers;
  /** A fetch with the client's retries (for calls outside the typed routes: presigned links, GraphQL). */
  readonly fetch: (req: Request) => Promise<Response>;
  readonly rawFetch: typeof fetch;
  readonly retry: RetryOptions | undefined;
}

/** A fresh idempotency key: one per logical request, reused by its retries. */
export const idempotencyKey = (): string => globalThis.crypto.randomUUID();

/** The typed core: openapi-fetch with the key, the version, idempotency keys on POST, retries and typed errors. */
export function createCore(opts: FpsClientOptions): Core {
  if (!opts.baseUrl) throw new TypeError("baseUrl is required (e.g. http://localhost:3000)");
  if (!opts.apiKey) throw new TypeError("apiKey is required (the x-api-key the service issued)");
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  const version = opts.version ?? LATEST_VERSION;
  const rawFetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  const fetchWithRetry = retryingFetch(rawFetch, opts.retry);
  const headers = (extra?: Record<string, string>) => {
    const h = new Headers(opts.headers);
    h.set("x-api-key", opts.apiKey);
    h.set("service-version", version);
    for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
    return h;
  };
  const api = createClient<paths>({ baseUrl, fetch: fetchWithRetry });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set("x-api-key", opts.apiKey);
      if (!request.headers.has("service-version")) request.headers.set("service-version", version);
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (!request.headers.has(k)) request.headers.set(k, v);
      // Every create may be retried safely: the service answers a repeated key with the first answer.
      if (request.method === "POST" && !request.headers.has("idempotency-key")) request.headers.set("idempotency-key", idempotencyKey());
      return request;
    },
    async onResponse({ response }) {
      if (response.ok) return response;
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      throw FpsError.from(response, body);
    },
  };
  api.use(auth);
  return { baseUrl, version, api, headers, fetch: fetchWithRetry, rawFetch, retry: opts.retry };
}
