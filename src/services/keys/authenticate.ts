import { eq } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { isApiVersion } from "../../domain/versions";
import type { Actor, Role, ServiceContext } from "../context";
import { parseToken, secretMatches } from "./token";

/** `lastUsedAt` is a hint, not an audit log: written at most this often per key. */
const LAST_USED_RESOLUTION_MS = 10 * 60 * 1000;

/** Resolves an `x-api-key` value to the caller, or refuses with `unauthorized`. */
export async function authenticate(ctx: ServiceContext, opts: { apiKey: string | null | undefined }): Promise<Actor> {
  if (!opts.apiKey) throw new AppError("unauthorized", "x-api-key: header is required");
  const parsed = parseToken(opts.apiKey.trim());
  if (!parsed) throw new AppError("unauthorized", "x-api-key: not a valid API key");
  const { apiKeys: k, workspaces: ws } = ctx.db.t;
  const [row] = await ctx.db.read
    .select({
      id: k.id,
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
    .where(eq(k.lookup, parsed.lookup));
  if (!row || !secretMatches(parsed.secret, row.secretHash)) {
    throw new AppError("unauthorized", "x-api-key: not a valid API key");
  }
  if (row.revokedAt) throw new AppError("unauthorized", "x-api-key: this API key has been revoked");

  const now = ctx.clock.now();
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    ctx.db
      .tx((w) => w.update(k).set({ lastUsedAt: now }).where(eq(k.id, row.id)))
      .catch((e) => ctx.log.warn({ err: e, keyId: row.id }, "could not record key use"));
  }
  return {
    workspaceId: row.workspaceId,
    keyId: row.id,
    role: row.role as Role,
    features: row.features,
    defaultVersion: row.defaultVersion && isApiVersion(row.defaultVersion) ? row.defaultVersion : null,
  };
}
