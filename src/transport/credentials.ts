import { AppError } from "../domain/errors";
import type { Actor, ServiceContext } from "../services/context";
import { authenticate } from "../services/keys/authenticate";
import { authenticateSession, SESSION_COOKIE } from "../services/people";

/** The client's address as Bun.serve saw it (set by the server's fetch, graphql/ws.ts); absent in-process. */
export { clientAddress } from "./admission";

export function sessionToken(request: Request): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return decodeURIComponent(part.slice(eq + 1).trim()) || null;
  }
  return null;
}

const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The CSRF defence of cookie requests: besides SameSite=Lax, a request that
 * can change state (anything but GET/HEAD/OPTIONS) must carry an Origin
 * equal to PUBLIC_URL's. Browsers always send Origin on such requests.
 */
export function checkOrigin(svc: ServiceContext, request: Request): void {
  if (SAFE.has(request.method)) return;
  const origin = request.headers.get("origin");
  const expected = new URL(svc.settings.publicUrl).origin;
  if (origin !== expected) {
    throw new AppError("forbidden", `origin: a request with the session cookie that changes state must come from ${expected} (got ${origin ?? "no Origin header"})`);
  }
}

/**
 * The caller of a GraphQL or tRPC request: the `x-api-key` when one is
 * sent, else the session cookie (with the Origin check). Both give the
 * same Actor, so roles and workspace scoping are enforced once, in the services.
 */
export async function authenticateRequest(svc: ServiceContext, request: Request, origin?: Actor["origin"]): Promise<Actor> {
  const apiKey = request.headers.get("x-api-key");
  const token = apiKey ? null : sessionToken(request);
  if (!token) return authenticate(svc, { apiKey, origin });
  checkOrigin(svc, request);
  const { actor } = await authenticateSession(svc, { token });
  return origin ? { ...actor, origin } : actor;
}
