import type { apiKeys } from "../../../db/pg/schema";
import type { ApiKeyView } from "./shapes";

export function toView(row: typeof apiKeys.$inferSelect): ApiKeyView {
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    name: row.name,
    role: row.role as ApiKeyView["role"],
    start: row.start,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}
