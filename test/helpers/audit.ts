/** An audit record as GET /audit-events answers it. */
export interface AuditRecord {
  id: string;
  action: string;
  resourceType: string;
  resourceId: string;
  fields: string[];
  actor: { type: string; id?: string; name?: string };
  surface: string;
  address?: string;
  requestId?: string;
  createdAt: string;
}
