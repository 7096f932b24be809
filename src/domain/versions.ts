import { AppError } from "./errors";

/**
 * API versions are dates. Additive features work in every version; only the
 * breaking changes listed in `VERSION_RULES` depend on the version applied
 * (docs/decisions/versioning.md).
 */
export const VERSIONS = ["2024-09-01", "2026-05-25"] as const;
export type ApiVersion = (typeof VERSIONS)[number];

export const LATEST_VERSION: ApiVersion = "2026-05-25";
export const DEFAULT_VERSION: ApiVersion = "2024-09-01";
export const LEGACY_VERSION: ApiVersion = "2024-09-01";
/** From this instant the legacy version and the /clients routes answer 410. */
export const SUNSET_AT = new Date("2027-05-25T00:00:00Z");
const SUNSET_MS = SUNSET_AT.getTime();
export const SUNSET_DATE = "2027-05-25";
export const MIGRATION_GUIDE_PATH = "/docs/migrations/2026-05-25";

export function isApiVersion(v: string): v is ApiVersion {
  return (VERSIONS as readonly string[]).includes(v);
}

export function parseVersion(v: string, field = "Service-Version"): ApiVersion {
  if (!isApiVersion(v)) {
    throw new AppError(
      "unsupported_version",
      `${field}: unknown version '${v}'; supported versions are ${VERSIONS.join(", ")}`,
    );
  }
  return v;
}

/** What differs between versions. Everything else is identical on the wire. */
export const VERSION_RULES: Record<ApiVersion, { returnsCredentials: boolean; hasDeliveredStatus: boolean }> = {
  "2024-09-01": { returnsCredentials: true, hasDeliveredStatus: false },
  "2026-05-25": { returnsCredentials: false, hasDeliveredStatus: true },
};

export interface VersionChoice {
  version: ApiVersion;
  /** True when the client chose it (header or workspace default), false when defaulted. */
  pinned: boolean;
}

/**
 * Header, else workspace default, else the service default. Once the legacy
 * version is sunset an unpinned request gets the latest version, while a
 * pinned legacy request is refused with 410.
 */
export function resolveVersion(opts: {
  header: ApiVersion | null;
  workspaceDefault: ApiVersion | null;
  /** A Date, or ms since the epoch (the request path reads the clock without making a Date). */
  now: Date | number;
}): VersionChoice {
  if (opts.header) return { version: opts.header, pinned: true };
  if (opts.workspaceDefault) return { version: opts.workspaceDefault, pinned: true };
  return { version: isSunset(opts.now) ? LATEST_VERSION : DEFAULT_VERSION, pinned: false };
}

export function isSunset(now: Date | number): boolean {
  return (typeof now === "number" ? now : now.getTime()) >= SUNSET_MS;
}

export function sunsetError(what: string, migrationUrl: string): AppError {
  return new AppError(
    "api_version_sunset",
    `${what} was retired on ${SUNSET_DATE}; send Service-Version: ${LATEST_VERSION} and use /connections (see ${migrationUrl})`,
    { migration_url: migrationUrl },
  );
}
