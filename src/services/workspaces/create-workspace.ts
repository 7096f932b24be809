import { newId } from "../../domain/ids";
import { parseInput } from "../../domain/validation";
import type { ServiceContext } from "../context";
import { insertKey } from "../keys/create-key";
import type { CreatedKey } from "../keys/shapes";
import { refuseFreeMail } from "./free-mail";
import { CreateWorkspaceInput, type WorkspaceView } from "./shapes";

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
    defaultVersion: input.defaultVersion ?? null,
    features: [],
    createdAt: now,
    updatedAt: now,
  };
  return ctx.db.tx(async (w) => {
    await w.insert(ctx.db.t.workspaces).values(workspace);
    const key = await insertKey(ctx, w, { workspaceId: workspace.id, role: "admin", name: "first admin key" });
    return { workspace, key };
  });
}
