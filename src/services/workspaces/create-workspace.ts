import { newId } from "../../domain/ids";
import { LATEST_VERSION } from "../../domain/versions";
import { parseInput } from "../../domain/validation";
import type { ServiceContext } from "../context";
import { insertKey } from "../keys/create-key";
import type { CreatedKey } from "../keys/shapes";
import { refuseFreeMail } from "./free-mail";
import { CreateWorkspaceInput, type WorkspaceView } from "./shapes";
import { recordAudit } from "../audit";

/** A workspace and its first admin key, in one transaction. */
export async function createWorkspace(
  ctx: ServiceContext,
  raw: CreateWorkspaceInput,
): Promise<{ workspace: WorkspaceView; key: CreatedKey }> {
  const input = parseInput(CreateWorkspaceInput, raw);
  refuseFreeMail(input.email);
  const now = ctx.clock.now();
  const workspace: WorkspaceView = {
    id: newId("workspace"),
    name: input.name,
    email: input.email.toLowerCase(),
    // Pinned to the newest version unless the caller asks for another (or for none: null, the contract's fallback),
    // as a new account is pinned to the version of its sign-up day (docs/decisions/versioning.md).
    defaultVersion: input.defaultVersion === undefined ? LATEST_VERSION : input.defaultVersion,
    features: [],
    createdAt: now,
    updatedAt: now,
  };
  return ctx.db.tx(async (w) => {
    await w.insert(ctx.db.t.workspaces).values(workspace);
    const key = await insertKey(ctx, w, { workspaceId: workspace.id, role: "admin", name: "first admin key" });
    await recordAudit(ctx, w, "cli", { workspaceId: workspace.id, action: "workspace.create", resourceType: "workspace", resourceId: workspace.id, fields: ["name", "email"] });
    await recordAudit(ctx, w, "cli", { workspaceId: workspace.id, action: "apiKey.create", resourceType: "apiKey", resourceId: key.id, fields: ["name", "role"] });
    return { workspace, key };
  });
}
