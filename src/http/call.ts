import { Elysia } from "elysia";
import { AppError } from "../domain/errors";
import { isJsonContentType, readJsonBody } from "../transport/body";
import {
  type ApiVersion,
  isApiVersion,
  isSunset,
  LEGACY_VERSION,
  MIGRATION_GUIDE_PATH,
  parseVersion,
  resolveVersion,
  SUNSET_DATE,
  sunsetError,
} from "../domain/versions";
import type { Actor, ServiceContext } from "../services/context";
import { admitKey, budgetOf, declaredBytes, type HttpOptions, limitKey } from "../transport/admission";
import { claimFor, idempotencyOf, settle } from "./idempotency";

/** The JSON body limit, the same on every surface. */
export type { HttpOptions };

export interface Call {
  actor: Actor;
  version: ApiVersion;
}

const isLegacyPath = (path: string) => path === "/clients" || path.startsWith("/clients/");

/**
 * What a reply refused before the caller is known (no key, unknown route) is
 * labelled with: the requested version when it is a known one, else the
 * version an unpinned request gets at this moment.
 */
export function provisionalVersion(request: Request, now: Date | number): ApiVersion {
  const h = request.headers.get("service-version")?.trim();
  if (h && isApiVersion(h)) return h;
  return resolveVersion({ header: null, workspaceDefault: null, now }).version;
}

/** Returned from the parse hook so Elysia leaves the body alone until the caller is known. */
const DEFERRED = Symbol("body read after authentication");
const BODYLESS = new Set(["GET", "HEAD", "DELETE", "OPTIONS"]);

/**
 * What a route declares of itself, as options on the route (the macros of
 * `callPlugin`): `ownBody` (file uploads, streamed to storage as they
 * arrive: the caller is admitted exactly as on every other route, but the
 * body is left unread and `input` stays undefined), `sessionCookie` (the
 * dashboard's session cookie is taken as well as a key, with the Origin
 * check: only the file upload, which the browser sends itself to watch its
 * progress; docs/decisions/dashboard.md) and `idempotencyKey` (a PUT route
 * that accepts `Idempotency-Key`; every POST does). Each marks the request
 * in the route's own transform hook, which runs before the admission below:
 * other routes pay one lookup, and a GET none but the cookie's.
 */
const ownBodyRequests = new WeakSet<Request>();
const sessionCookieRequests = new WeakSet<Request>();
const keyedPutRequests = new WeakSet<Request>();

/**
 * For every REST route: authenticate the key, choose the API version
 * (header, workspace default, service default), refuse sunset versions and
 * routes, and label the reply with the version and deprecation headers.
 * Only then is the JSON body read (with its size limit), as `input`: an
 * anonymous caller cannot make the service read a body.
 */
export function callPlugin(svc: ServiceContext, http: HttpOptions) {
  const migrationUrl = `${svc.settings.publicUrl}${MIGRATION_GUIDE_PATH}`;
  return new Elysia({ name: "call" })
    .macro({
      ownBody: { transform: ({ request }) => void ownBodyRequests.add(request) },
      sessionCookie: { transform: ({ request }) => void sessionCookieRequests.add(request) },
      idempotencyKey: { transform: ({ request }) => void keyedPutRequests.add(request) },
    })
    .onParse({ as: "global" }, () => DEFERRED)
    // Before the Date conversion below: the first answer is stored as it is sent. Not an async function: a
    // request without an Idempotency-Key (every GET) makes no promise here. Elysia awaits what this returns
    // (it reads `return settleFirst(` as asynchronous), so a failure to store still reaches the error handler.
    .onAfterHandle({ as: "global" }, ({ request, responseValue, set }) => {
      const idem = idempotencyOf(request);
      if (!idem || idem.replay || responseValue instanceof Response) return;
      return settleFirst(svc, request, typeof set.status === "number" ? set.status : 200, responseValue);
    })
    // The same JSON, serialised on Bun's fast path: a Date sends JSON.stringify to its slow path (about 4 µs a pipeline, 60 µs a page of connections).
    // A value `presenter` made (a record from a read cache) is sent as the JSON text made the first time.
    .onAfterHandle({ as: "global" }, ({ responseValue, set }) => {
      const text = typeof responseValue === "object" && responseValue !== null ? jsonText.get(responseValue) : undefined;
      if (text !== undefined) {
        set.headers["content-type"] = JSON_TYPE;
        return text;
      }
      const plain = datesAsText(responseValue);
      return plain === responseValue ? undefined : plain;
    })
    .resolve({ as: "global" }, async ({ request, set, path }) => {
      const admitted = admitKey(svc, request, "rest", { sessions: sessionCookieRequests.has(request) });
      const actor = admitted instanceof Promise ? await admitted : admitted;
      const limited = limitKey(svc, budgetOf(actor), BODYLESS.has(request.method) ? 0 : declaredBytes(request));
      const limits = limited instanceof Promise ? await limited : limited;
      if (limits) for (const name in limits) set.headers[name] = limits[name] as string;
      const now = svc.clock.millis();
      // Until the header is known to be valid, replies carry the workspace's own default.
      set.headers["service-version"] = resolveVersion({ header: null, workspaceDefault: actor.defaultVersion, now }).version;
      const raw = request.headers.get("service-version");
      const header = raw === null ? null : parseVersion(raw.trim());
      const choice = resolveVersion({ header, workspaceDefault: actor.defaultVersion, now });
      set.headers["service-version"] = choice.version;
      const legacyPath = isLegacyPath(path);
      if (legacyPath || choice.version === LEGACY_VERSION) {
        set.headers.deprecation = "true";
        set.headers.sunset = SUNSET_DATE;
        set.headers.link = `<${migrationUrl}>; rel="deprecation"; type="text/markdown"`;
      }
      if (isSunset(now)) {
        if (choice.pinned && choice.version === LEGACY_VERSION) throw sunsetError(`API version ${LEGACY_VERSION}`, migrationUrl);
        if (legacyPath) throw sunsetError("The /clients API", migrationUrl);
      }
      let input: unknown;
      const bodyless = BODYLESS.has(request.method);
      const ownBody = !bodyless && ownBodyRequests.has(request);
      if (!bodyless && !ownBody) {
        const contentType = request.headers.get("content-type");
        if (!isJsonContentType(contentType)) {
          throw new AppError("unsupported_media_type", `content-type: '${contentType}' is not accepted here; send application/json`);
        }
        input = await readJsonBody(request, http.maxJsonBodyBytes);
      }
      // Every POST takes a key, and the PUT routes that say so (src/http/idempotency.ts).
      const keyed = !bodyless && (request.method === "POST" || keyedPutRequests.has(request));
      const idempotencyKey = keyed ? request.headers.get("idempotency-key") : null;
      if (idempotencyKey !== null) await claimFor(svc, request, { key: idempotencyKey, actor, path, ownBody, input });
      const call: Call = { actor, version: choice.version };
      return { call, input };
    })
    // After the resolve above (hooks run in the order given): a repeated request with a completed Idempotency-Key gets the first answer without running again.
    .onBeforeHandle({ as: "global" }, ({ request, set }) => {
      const idem = idempotencyOf(request);
      if (!idem?.replay || idem.ownBody) return;
      set.status = idem.replay.status;
      set.headers["idempotent-replayed"] = "true";
      return idem.replay.body;
    });
}

/**
 * `value` with every Date in its plain objects and arrays replaced by what
 * JSON.stringify would write for it (`toJSON`: the ISO string, null when
 * invalid). Objects and arrays without a Date are returned as they are;
 * those with one are copied, never changed in place.
 */
export function datesAsText(value: unknown): unknown {
  if (value instanceof Date) return value.toJSON();
  if (typeof value === "object" && value !== null && knownPlain.has(value)) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      const t = typeof v === "object" && v !== null ? datesAsText(v) : v;
      if (t !== v) (out ??= value.slice())[i] = t;
    }
    return out ?? value;
  }
  if (typeof value !== "object" || value === null) return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Record<string, unknown> | null = null;
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    const t = typeof v === "object" && v !== null ? datesAsText(v) : v;
    if (t === v) continue;
    out ??= { ...(value as Record<string, unknown>) };
    // An own `__proto__` member (JSON.parse makes one) must stay a member, not become the prototype.
    if (key === "__proto__") Object.defineProperty(out, key, { value: t, enumerable: true, writable: true, configurable: true });
    else out[key] = t;
  }
  return out ?? value;
}

/** Values `presenter` made: already free of Dates, frozen, not walked again. */
const knownPlain = new WeakSet<object>();
/** The JSON text of each value `presenter` made (frozen: it cannot change), made on its first reply. */
const jsonText = new WeakMap<object, string>();
/** What Response.json would send. */
const JSON_TYPE = "application/json;charset=utf-8";

/** Stores a first answer under its Idempotency-Key (as JSON would carry it); the reply waits for it. */
function settleFirst(svc: ServiceContext, request: Request, status: number, value: unknown): Promise<void> {
  return settle(svc, request, { status, body: datesAsText(value) });
}

/**
 * A REST presenter for records that may come from a read cache
 * (db/read-cache.ts: frozen, the same object on every hit). For such a
 * record the reply value (dates as text) is made once per API version and
 * reused; any other record is presented each time. `reusable(version)` is
 * false where the value carries secrets in clear (they are never kept).
 */
export function presenter<R extends object, V>(
  present: (rec: R, version: ApiVersion) => V,
  reusable: (version: ApiVersion) => boolean = () => true,
): (rec: R, version: ApiVersion) => V {
  const made = new WeakMap<R, Partial<Record<ApiVersion, V>>>();
  return (rec, version) => {
    if (!Object.isFrozen(rec) || !reusable(version)) return present(rec, version);
    let byVersion = made.get(rec);
    const hit = byVersion?.[version];
    if (hit !== undefined) return hit;
    const value = Object.freeze(datesAsText(present(rec, version))) as V;
    knownPlain.add(value as object);
    jsonText.set(value as object, JSON.stringify(value));
    if (!byVersion) made.set(rec, (byVersion = {}));
    byVersion[version] = value;
    return value;
  };
}
