import { AppError } from "../domain/errors";
import type { Actor, ServiceContext, Surface } from "../services/context";
import { authenticate } from "../services/keys/authenticate";
import type { Budget, KeyVerdicts, RateLimits, Verdict } from "../services/rate-limits";
import { currentRequestId } from "../domain/request-context";
import { authenticateRequest } from "./credentials";

/**
 * The door every HTTP surface admits a key through: the caller's origin
 * (surface, address, request id), the per-address limit on failed logins,
 * the key itself, and the key's request and upload-byte budgets with the
 * IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers:
 * `RateLimit-Policy` and `RateLimit`). docs/decisions/rate-limits.md.
 */

/** Client addresses as the listening server saw them (Bun.serve's requestIP), by request. */
const addresses = new WeakMap<Request, string>();
export function rememberAddress(request: Request, address: string | null | undefined): void {
  if (address) addresses.set(request, address);
}
export function clientAddress(request: Request): string | null {
  return addresses.get(request) ?? null;
}

/** The id of the request being served (src/http/observe.ts gives every request one: the client's when well formed). */
export function requestIdOf(_request: Request): string | null {
  return currentRequestId() ?? null;
}

export type LimitHeaders = Record<string, string>;

/** The RateLimit-Policy value of each budget, made once. */
const policyText = new WeakMap<Budget, string>();
function policyOf(b: Budget, unit: string | null): string {
  let text = policyText.get(b);
  if (text === undefined) {
    text = `"${b.name}";q=${b.quota};w=${b.windowMs / 1000}${unit ? `;qu="${unit}"` : ""}`;
    policyText.set(b, text);
  }
  return text;
}

const item = (b: Budget, v: Verdict) => `"${b.name}";r=${v.remaining};t=${v.resetSeconds}`;

/** The header fields of a key's call: every answer under a limited key carries them; a refusal adds Retry-After. */
export function keyLimitHeaders(limits: RateLimits, v: KeyVerdicts): LimitHeaders | null {
  const { requests, bytes } = limits;
  if (requests && v.requests && bytes && v.bytes) {
    const h: LimitHeaders = {
      "ratelimit-policy": `${policyOf(requests, null)}, ${policyOf(bytes, "content-bytes")}`,
      ratelimit: `${item(requests, v.requests)}, ${item(bytes, v.bytes)}`,
    };
    if (v.refusedBy) h["retry-after"] = String(v.refusedBy === "requests" ? v.requests.resetSeconds : v.bytes.resetSeconds);
    return h;
  }
  const [b, one] = requests && v.requests ? [requests, v.requests] : bytes && v.bytes ? [bytes, v.bytes] : [null, null];
  if (!b || !one) return null;
  const h: LimitHeaders = { "ratelimit-policy": policyOf(b, b === bytes ? "content-bytes" : null), ratelimit: item(b, one) };
  if (v.refusedBy) h["retry-after"] = String(one.resetSeconds);
  return h;
}

/** A refusal that carries the header fields its answer must have, whatever the surface. */
export class LimitedError extends AppError {
  constructor(
    message: string,
    readonly headers: LimitHeaders,
  ) {
    super("rate_limited", message, { retryAfter: Number(headers["retry-after"]) });
  }
}
export const limitHeadersOf = (e: unknown): LimitHeaders | null => (e instanceof LimitedError ? e.headers : null);

function refusal(v: KeyVerdicts, headers: LimitHeaders): LimitedError {
  const what = v.refusedBy === "requests" ? "requests" : "uploaded bytes";
  return new LimitedError(`rate limited: this API key has used its ${what} for now; retry after ${headers["retry-after"]} s`, headers);
}

/** Declared body size of a request (0 for none or unknown; a streamed upload is charged once read). */
export function declaredBytes(request: Request): number {
  const n = Number(request.headers.get("content-length") ?? 0);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** Counts one call of the key; refuses over budget. The answer's header fields either way (null: no budgets). */
/** Whose budgets a call spends: its API key's, or the person's behind a session. */
export const budgetOf = (actor: Actor): string => actor.keyId ?? `user:${actor.userId}`;

export async function limitKey(svc: ServiceContext, keyId: string, bytes: number): Promise<LimitHeaders | null> {
  const limits = svc.rateLimits;
  if (!limits.requests && !limits.bytes) return null;
  const pending = limits.forKey(keyId, bytes);
  const v = pending instanceof Promise ? await pending : pending;
  const headers = keyLimitHeaders(limits, v);
  if (v.refusedBy && headers) throw refusal(v, headers);
  return headers;
}

/**
 * Authenticates `x-api-key` for `surface`. An address that has sent too many
 * unknown keys is refused (429) before its key is looked at; each refused
 * key counts against its address. In-process calls (no address) are not limited.
 */
export async function admitKey(svc: ServiceContext, request: Request, surface: Surface, opts: { sessions?: boolean } = {}): Promise<Actor> {
  const address = clientAddress(request);
  const limits = svc.rateLimits;
  if (address !== null && limits.authFailures) {
    const v = await limits.loginAllowed(address);
    if (v && !v.allowed) {
      const b = limits.authFailures;
      throw new LimitedError(`rate limited: too many requests with a missing or unknown API key from this address; retry after ${v.resetSeconds} s`, {
        "ratelimit-policy": policyOf(b, null),
        ratelimit: item(b, v),
        "retry-after": String(v.resetSeconds),
      });
    }
  }
  try {
    const origin = { surface, address, requestId: requestIdOf(request) };
    // A person's session cookie where the surface takes one (tRPC, GraphQL, the REST upload route), else the key.
    return opts.sessions ? await authenticateRequest(svc, request, origin) : await authenticate(svc, { apiKey: request.headers.get("x-api-key"), origin });
  } catch (e) {
    if (address !== null && e instanceof AppError && e.code === "unauthorized") limits.failedLogin(address);
    throw e;
  }
}
