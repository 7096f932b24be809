import { eq, sql } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { isApiVersion } from "../../domain/versions";
import type { Actor, Origin, Role, ServiceContext } from "../context";
import { type CachedKey, keyCacheOf } from "./cache";
import { parseToken, secretMatches } from "./token";

/** `lastUsedAt` is a hint, not an audit log: written at most this often per key. */
const LAST_USED_RESOLUTION_MS = 10 * 60 * 1000;

function lookupKey(ctx: ServiceContext, lookup: string): Promise<CachedKey[]> {
  const { apiKeys: k, workspaces: ws } = ctx.db.t;
  return ctx.db.prepared("keys.byLookup", (r) =>
    r
      .select({
        id: k.id,
        name: k.name,
        secretHash: k.secretHash,
        role: k.role,
        revokedAt: k.revokedAt,
        lastUsedAt: k.lastUsedAt,
        workspaceId: ws.id,
        features: ws.features,
        defaultVersion: ws.defaultVersion,
      })
      .from(k)
      .innerJoin(ws, eq(ws.id, k.workspaceId))
      .where(eq(k.lookup, sql.placeholder("lookup"))),
  )({ lookup });
}

/**
 * Resolves an `x-api-key` value to the caller, or refuses with `unauthorized`.
 * The row comes from the key cache when it holds it (src/services/keys/cache.ts:
 * a revoked key is refused by every instance within a second); the secret is
 * checked against the stored digest on every call either way.
 */
export async function authenticate(ctx: ServiceContext, opts: { apiKey: string | null | undefined; origin?: Origin }): Promise<Actor> {
  return authenticateKey(ctx, opts);
}

/**
 * As `authenticate`, answering at once when the key is in the cache (the
 * request path: no promise to make or wait for); a refusal is thrown, or
 * rejects when the key had to be read.
 */
export function authenticateKey(ctx: ServiceContext, opts: { apiKey: string | null | undefined; origin?: Origin }): Actor | Promise<Actor> {
  if (!opts.apiKey) throw new AppError("unauthorized", "x-api-key: header is required");
  const parsed = parseToken(opts.apiKey.trim());
  if (!parsed) throw new AppError("unauthorized", "x-api-key: not a valid API key");
  const cache = keyCacheOf(ctx.db);
  const row = cache.get(parsed.lookup);
  if (row) return actorOf(ctx, row, parsed.secret, opts.origin);
  const ticket = cache.ticket();
  return lookupKey(ctx, parsed.lookup).then(([found]) => {
    if (found) {
      found.secretDigest = Buffer.from(found.secretHash, "hex");
      cache.store(parsed.lookup, found, ticket);
    }
    return actorOf(ctx, found, parsed.secret, opts.origin);
  });
}

function actorOf(ctx: ServiceContext, row: CachedKey | undefined, secret: string, origin: Origin | undefined): Actor {
  if (!row || !secretMatches(secret, row.secretDigest ?? row.secretHash)) {
    throw new AppError("unauthorized", "x-api-key: not a valid API key");
  }
  if (row.revokedAt) throw new AppError("unauthorized", "x-api-key: this API key has been revoked");

  const nowMs = ctx.clock.millis();
  if (!row.lastUsedAt || nowMs - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    const now = new Date(nowMs);
    // The cached row takes the new value too, so that requests served from it do not write again.
    row.lastUsedAt = now;
    const k = ctx.db.t.apiKeys;
    const id = row.id;
    ctx.db
      .tx((w) => w.update(k).set({ lastUsedAt: now }).where(eq(k.id, id)), { quiet: true })
      .catch((e) => ctx.log.warn({ err: e, keyId: id }, "could not record key use"));
  }
  return {
    workspaceId: row.workspaceId,
    keyId: row.id,
    keyName: row.name,
    role: row.role as Role,
    features: row.features,
    defaultVersion: row.defaultVersion && isApiVersion(row.defaultVersion) ? row.defaultVersion : null,
    origin,
  };
}
