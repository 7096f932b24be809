import { Elysia } from "elysia";
import { AppError } from "../domain/errors";
import { isJsonContentType, readJsonBody } from "./body";
import {
  type ApiVersion,
  DEFAULT_VERSION,
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
import { authenticate } from "../services/keys/authenticate";

export interface HttpOptions {
  maxJsonBodyBytes: number;
}

export interface Call {
  actor: Actor;
  version: ApiVersion;
}

const isLegacyPath = (path: string) => path === "/clients" || path.startsWith("/clients/");

/** The version header's value when it names a known version: what an early error reply is labelled with. */
export function provisionalVersion(request: Request): ApiVersion {
  const h = request.headers.get("service-version")?.trim();
  return h && isApiVersion(h) ? h : DEFAULT_VERSION;
}

/** Returned from the parse hook so Elysia leaves the body alone until the caller is known. */
const DEFERRED = Symbol("body read after authentication");
const BODYLESS = new Set(["GET", "HEAD", "DELETE", "OPTIONS"]);

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
    .onParse({ as: "global" }, () => DEFERRED)
    .resolve({ as: "global" }, async ({ request, set, path }) => {
      const actor = await authenticate(svc, { apiKey: request.headers.get("x-api-key") });
      const raw = request.headers.get("service-version");
      const header = raw === null ? null : parseVersion(raw.trim());
      const now = svc.clock.now();
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
      if (!BODYLESS.has(request.method)) {
        const contentType = request.headers.get("content-type");
        if (!isJsonContentType(contentType)) {
          throw new AppError("unsupported_media_type", `content-type: '${contentType}' is not accepted here; send application/json`);
        }
        input = await readJsonBody(request, http.maxJsonBodyBytes);
      }
      const call: Call = { actor, version: choice.version };
      return { call, input };
    });
}
