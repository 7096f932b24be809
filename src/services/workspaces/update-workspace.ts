import { eq } from "drizzle-orm";
import { notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { ServiceContext } from "../context";
import { SetDefaultVersionInput, SetFeatureInput, type WorkspaceView } from "./shapes";

async function update(
  ctx: ServiceContext,
  workspaceId: string,
  change: (current: WorkspaceView) => Partial<WorkspaceView>,
): Promise<WorkspaceView> {
  const ws = ctx.db.t.workspaces;
  return ctx.db.tx(async (w) => {
    const [row] = await w.select().from(ws).where(eq(ws.id, workspaceId));
    if (!row) throw notFound("workspace", workspaceId);
    const next = { ...row, ...change(row), updatedAt: ctx.clock.now() };
    await w.update(ws).set(next).where(eq(ws.id, workspaceId));
    return next;
  });
}

export async function setFeature(
  ctx: ServiceContext,
  raw: { workspaceId: string; feature: string; enabled: boolean },
): Promise<WorkspaceView> {
  const input = parseInput(SetFeatureInput, raw);
  return update(ctx, input.workspaceId, (cur) => {
    const rest = cur.features.filter((f) => f !== input.feature);
    return { features: input.enabled ? [...rest, input.feature] : rest };
  });
}

/** The version applied to this workspace's requests that carry no Service-Version header; null restores the service default. */
export async function setDefaultVersion(
  ctx: ServiceContext,
  raw: { workspaceId: string; version: string | null },
): Promise<WorkspaceView> {
  const input = parseInput(SetDefaultVersionInput, raw);
  return update(ctx, input.workspaceId, () => ({ defaultVersion: input.version }));
}
