import { asc, eq } from "drizzle-orm";
import type { ServiceContext } from "../context";
import { toView } from "./present";
import type { ApiKeyView } from "./shapes";

export async function listKeys(ctx: ServiceContext, opts: { workspaceId: string }): Promise<ApiKeyView[]> {
  const k = ctx.db.t.apiKeys;
  const rows = await ctx.db.read.select().from(k).where(eq(k.workspaceId, opts.workspaceId)).orderBy(asc(k.createdAt), asc(k.id));
  return rows.map(toView);
}
