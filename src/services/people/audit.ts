import { eq } from "drizzle-orm";
import type { Writer } from "../../../db/client";
import { type AuditChange, type ChangedBy, recordAudit } from "../audit";
import type { ServiceContext } from "../context";

/**
 * A change to a person's account (not to one session): recorded in every
 * workspace the person belongs to, since each one's admins answer for who
 * works in it. docs/decisions/audit.md.
 */
export async function recordAccountChange(
  ctx: ServiceContext,
  w: Writer,
  by: ChangedBy,
  userId: string,
  change: Omit<AuditChange, "workspaceId" | "resourceType" | "resourceId">,
): Promise<void> {
  const m = ctx.db.t.memberships;
  const rows = await w.select({ workspaceId: m.workspaceId }).from(m).where(eq(m.userId, userId));
  for (const { workspaceId } of rows) await recordAudit(ctx, w, by, { ...change, workspaceId, resourceType: "person", resourceId: userId });
}
