import { AppError } from "../domain/errors";
import type { Actor, Origin, ServiceContext, Surface } from "../services/context";
import { authenticateKey } from "../services/keys/authenticate";
import type { Budget, KeyVerdicts, RateLimits, Verdict } from "../services/rate-limits";
import { currentRequestId } from "../domain/request-context";
import { parseVersion } from "../domain/versions";
import { boundedJsonRequest, readCheckedBody } from "./body";
import { authenticateRequest } from "./credentials";

/**
 * The door every HTTP surface admits a key through: the caller's origin
 * (surface, address, request id), the per-address limit on failed logins,
 * the key itself, and the key's request and upload-byte budgets with the
 * IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers:
 * `RateLimit-Policy` and `RateLimit`). docs/decisions/rate-limits.md.
 */

/** What can tell a request's client address: the listening server (Bun.serve's `requestIP`). */
export interface AddressSource {
  requestIP(request: Request): { address: string } | null;
}

/**
 * The server each request came through, and its client address once asked
 * for: `requestIP` costs about 0.6 µs, and most requests never need the
 * address (no failed logins to check it against, no audit record).
 */
const SERVER = Symbol("server");
const ADDRESS = Symbol("client address");
/** Kept on the request itself: a WeakMap entry per request cost more, in its own time and in each collection's. */
interface OriginOf {
  [SERVER]?: AddressSource;
  [ADDRESS]?: string | null;
}
export function rememberServer(request: Request, server: AddressSource): void {
  (request as OriginOf)[SERVER] = server;
}
export function clientAddress(request: Request): string | null {
  const o = request as OriginOf;
  const server = o[SERVER];
  if (!server) return null;
  let address = o[ADDRESS];
  if (address === undefined) o[ADDRESS] = address = server.requestIP(request)?.address ?? null;
  return address;
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

/**
 * `"name";r=<remaining>;t=<reset>` of a budget. The last text made for each
 * budget is kept and given again while its numbers stay the same (the byte
 * budget on every request that sends no body).
 */
const lastItem = new WeakMap<Budget, { head: string; remaining: number; reset: number; text: string }>();
function item(b: Budget, v: Verdict): string {
  let last = lastItem.get(b);
  if (last === undefined) lastItem.set(b, (last = { head: `"${b.name}";r=`, remaining: -1, reset: -1, text: "" }));
  else if (last.remaining === v.remaining && last.reset === v.resetSeconds) return last.text;
  last.remaining = v.remaining;
  last.reset = v.resetSeconds;
  return (last.text = `${last.head}${v.remaining};t=${v.resetSeconds}`);
}

/** The RateLimit-Policy field of a key's answers (both budgets, or the one enabled), made once per set of budgets. */
const keyPolicies = new WeakMap<RateLimits, string>();
function keyPolicyOf(limits: RateLimits): string {
  let text = keyPolicies.get(limits);
  if (text === undefined) {
    const { requests, bytes } = limits;
    text = [requests ? policyOf(requests, null) : null, bytes ? policyOf(bytes, "content-bytes") : null].filter(Boolean).join(", ");
    keyPolicies.set(limits, text);
  }
  return text;
}

/** The header fields of a key's call: every answer under a limited key carries them; a refusal adds Retry-After. */
export function keyLimitHeaders(limits: RateLimits, v: KeyVerdicts): LimitHeaders | null {
  const { requests, bytes } = limits;
  let current: string;
  if (requests && v.requests && bytes && v.bytes) current = `${item(requests, v.requests)}, ${item(bytes, v.bytes)}`;
  else if (requests && v.requests) current = item(requests, v.requests);
  else if (bytes && v.bytes) current = item(bytes, v.bytes);
  else return null;
  const h: LimitHeaders = { "ratelimit-policy": keyPolicyOf(limits), ratelimit: current };
  if (v.refusedBy) h["retry-after"] = String(v.refusedBy === "requests" ? v.requests!.resetSeconds : v.bytes!.resetSeconds);
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

/** Whose budgets a call spends: its API key's, or the person's behind a session. */
export const budgetOf = (actor: Actor): string => actor.keyId ?? `user:${actor.userId}`;

/**
 * Counts one call of the key; refuses over budget. The answer's header
 * fields either way (null: no budgets). Answers at once when the counts are
 * at hand (always in process; on Postgres unless the shared count must be
 * read first): callers await only a Promise.
 */
export function limitKey(svc: ServiceContext, keyId: string, bytes: number): LimitHeaders | null | Promise<LimitHeaders | null> {
  const limits = svc.rateLimits;
  if (!limits.requests && !limits.bytes) return null;
  const v = limits.forKey(keyId, bytes);
  return v instanceof Promise ? v.then((r) => limitHeaders(limits, r)) : limitHeaders(limits, v);
}

function limitHeaders(limits: RateLimits, v: KeyVerdicts): LimitHeaders | null {
  const headers = keyLimitHeaders(limits, v);
  if (v.refusedBy && headers) throw refusal(v, headers);
  return headers;
}

function loginRefused(limits: RateLimits, v: Verdict): LimitedError {
  const b = limits.authFailures as Budget;
  return new LimitedError(`rate limited: too many requests with a missing or unknown API key from this address; retry after ${v.resetSeconds} s`, {
    "ratelimit-policy": policyOf(b, null),
    ratelimit: item(b, v),
    "retry-after": String(v.resetSeconds),
  });
}

/**
 * Authenticates `x-api-key` for `surface`. An address that has sent too many
 * unknown keys is refused (429) before its key is looked at; each refused
 * key counts against its address. In-process calls (no address) are not limited.
 * Answers at once for a key in the cache (a refusal is then thrown).
 */
export function admitKey(svc: ServiceContext, request: Request, surface: Surface, opts: { sessions?: boolean } = {}): Actor | Promise<Actor> {
  const limits = svc.rateLimits;
  const sessions = opts.sessions === true;
  // In process, while no address has a failed login counted, there is nothing to check (nor an address to look up).
  if (!limits.loginsMayBeRefused()) return identify(svc, request, surface, sessions);
  const address = clientAddress(request);
  const refused = address !== null ? limits.loginRefusal(address) : null;
  if (refused instanceof Promise) {
    return refused.then((v) => {
      if (v) throw loginRefused(limits, v);
      return identify(svc, request, surface, sessions);
    });
  }
  if (refused) return Promise.reject(loginRefused(limits, refused));
  return identify(svc, request, surface, sessions);
}

/** Who sent a request, for the audit record; the address is looked up only if a record asks for it. */
class RequestOrigin implements Origin {
  constructor(
    readonly surface: Surface,
    readonly requestId: string | null,
    private readonly request: Request,
  ) {}
  get address(): string | null {
    return clientAddress(this.request);
  }
}
const originOf = (request: Request, surface: Surface): Origin => new RequestOrigin(surface, requestIdOf(request), request);

function identify(svc: ServiceContext, request: Request, surface: Surface, sessions: boolean): Actor | Promise<Actor> {
  let actor: Actor | Promise<Actor>;
  try {
    const origin = originOf(request, surface);
    // A person's session cookie where the surface takes one (tRPC, GraphQL, the REST upload route), else the key.
    actor = sessions ? authenticateRequest(svc, request, origin) : authenticateKey(svc, { apiKey: request.headers.get("x-api-key"), origin });
  } catch (e) {
    throw counted(svc, request, e);
  }
  return actor instanceof Promise ? actor.catch((e: unknown) => Promise.reject(counted(svc, request, e))) : actor;
}

/** A refused key counts against its address's failed logins. */
function counted(svc: ServiceContext, request: Request, e: unknown): unknown {
  if (e instanceof AppError && e.code === "unauthorized") {
    const address = clientAddress(request);
    if (address !== null) svc.rateLimits.failedLogin(address);
  }
  return e;
}

/** What every surface served over HTTP limits a JSON body to (MAX_JSON_BODY_BYTES). */
export interface HttpOptions {
  maxJsonBodyBytes: number;
}

/**
 * GraphQL and tRPC serve their own requests, unversioned; before they do,
 * the caller passes the same checks as on REST: a valid key, a known version
 * if one is named, and then a JSON body within the limit.
 */
export async function admitUnversioned(
  svc: ServiceContext,
  request: Request,
  http: HttpOptions,
  surface: "trpc" | "graphql",
): Promise<{ actor: Actor; request: Request }> {
  // tRPC counts each procedure call against the key's budgets (trpc/init.ts), not the request.
  const actor = await admitKey(svc, request, surface, { sessions: true });
  const raw = request.headers.get("service-version");
  if (raw !== null) parseVersion(raw.trim());
  return { actor, request: await boundedJsonRequest(request, http.maxJsonBodyBytes) };
}

/**
 * As `admitUnversioned`, for a transport that takes the parsed body instead
 * of a request to read again (GraphQL): the checked JSON value, or null when
 * no body was sent.
 */
export async function admitUnversionedParsed(
  svc: ServiceContext,
  request: Request,
  http: HttpOptions,
): Promise<{ actor: Actor; body: { value: unknown } | null; limits: LimitHeaders | null }> {
  const actor = await admitKey(svc, request, "graphql", { sessions: true });
  const limits = await limitKey(svc, budgetOf(actor), declaredBytes(request));
  const raw = request.headers.get("service-version");
  if (raw !== null) parseVersion(raw.trim());
  return { actor, body: await readCheckedBody(request, http.maxJsonBodyBytes), limits };
}
