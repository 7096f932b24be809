import { eq } from "drizzle-orm";
import { notFound } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { ServiceContext } from "../context";
import { SetDefaultVersionInput, SetFeatureInput, type WorkspaceView } from "./shapes";
import { type ChangedBy, recordAudit } from "../audit";

async function update(
  ctx: ServiceContext,
  workspaceId: string,
  audit: { action: string; fields: string[]; by: ChangedBy },
  change: (current: WorkspaceView) => Partial<WorkspaceView>,
): Promise<WorkspaceView> {
  const ws = ctx.db.t.workspaces;
  return ctx.db.tx(async (w) => {
    const [row] = await w.select().from(ws).where(eq(ws.id, workspaceId));
    if (!row) throw notFound("workspace", workspaceId);
    const next = { ...row, ...change(row), updatedAt: ctx.clock.now() };
    await w.update(ws).set(next).where(eq(ws.id, workspaceId));
    await recordAudit(ctx, w, audit.by, { workspaceId, action: audit.action, resourceType: "workspace", resourceId: workspaceId, fields: audit.fields });
    return next;
  });
}

export async function setFeature(
  ctx: ServiceContext,
  raw: { workspaceId: string; feature: string; enabled: boolean },
  by: ChangedBy = "cli",
): Promise<WorkspaceView> {
  const input = parseInput(SetFeatureInput, raw);
  return update(ctx, input.workspaceId, { action: input.enabled ? "workspace.enableFeature" : "workspace.disableFeature", fields: [`features/${input.feature}`], by }, (cur) => {
    const rest = cur.features.filter((f) => f !== input.feature);
    return { features: input.enabled ? [...rest, input.feature] : rest };
  });
}

/** The version applied to this workspace's requests that carry no Service-Version header; null restores the service default. */
export async function setDefaultVersion(
  ctx: ServiceContext,
  raw: { workspaceId: string; version: string | null },
  by: ChangedBy = "cli",
): Promise<WorkspaceView> {
  const input = parseInput(SetDefaultVersionInput, raw);
  return update(ctx, input.workspaceId, { action: "workspace.setVersion", fields: ["defaultVersion"], by }, () => ({ defaultVersion: input.version }));
}
