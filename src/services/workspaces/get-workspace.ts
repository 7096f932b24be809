import { eq } from "drizzle-orm";
import { notFound } from "../../domain/errors";
import type { ServiceContext } from "../context";
import type { WorkspaceView } from "./shapes";

export async function getWorkspace(ctx: ServiceContext, opts: { workspaceId: string }): Promise<WorkspaceView> {
  const ws = ctx.db.t.workspaces;
  const [row] = await ctx.db.read.select().from(ws).where(eq(ws.id, opts.workspaceId));
  if (!row) throw notFound("workspace", opts.workspaceId);
  return row;
}
