import { eq } from "drizzle-orm";
import type { Writer } from "../../../db/client";
import { notFound } from "../../domain/errors";
import { newId } from "../../domain/ids";
import { parseInput } from "../../domain/validation";
import type { ServiceContext } from "../context";
import { CreateKeyInput, type CreatedKey } from "./shapes";
import { newToken } from "./token";
import { type ChangedBy, recordAudit } from "../audit";

/** Keys are made by the admin CLI (`by` defaults to it). */
export async function createKey(ctx: ServiceContext, raw: CreateKeyInput, by: ChangedBy = "cli"): Promise<CreatedKey> {
  const input = parseInput(CreateKeyInput, raw);
  return ctx.db.tx(async (w) => {
    const [ws] = await w.select({ id: ctx.db.t.workspaces.id }).from(ctx.db.t.workspaces).where(eq(ctx.db.t.workspaces.id, input.workspaceId));
    if (!ws) throw notFound("workspace", input.workspaceId);
    const key = await insertKey(ctx, w, input);
    await recordAudit(ctx, w, by, { workspaceId: key.workspaceId, action: "apiKey.create", resourceType: "apiKey", resourceId: key.id, fields: ["name", "role"] });
    return key;
  });
}

/** Inside a caller's transaction: workspace creation makes its first key with it. */
export async function insertKey(
  ctx: ServiceContext,
  w: Writer,
  input: { workspaceId: string; role: "admin" | "member"; name: string },
): Promise<CreatedKey> {
  const now = ctx.clock.now();
  const t = newToken();
  const row = {
    id: newId("apiKey"),
    workspaceId: input.workspaceId,
    name: input.name,
    role: input.role,
    lookup: t.lookup,
    secretHash: t.secretHash,
    start: t.start,
    lastUsedAt: null,
    revokedAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await w.insert(ctx.db.t.apiKeys).values(row);
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    role: row.role,
    start: row.start,
    createdAt: now,
    lastUsedAt: null,
    revokedAt: null,
    apiKey: t.token,
  };
}
