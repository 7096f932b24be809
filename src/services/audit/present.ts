import type { AuditEventRow } from "./list-audit-events";
import type { AuditEvent } from "./shapes";

export function presentAuditEvent(r: AuditEventRow): AuditEvent {
  return {
    id: r.id,
    action: r.action,
    resourceType: r.resourceType,
    resourceId: r.resourceId,
    fields: r.fields,
    actor: {
      type: r.actorType as AuditEvent["actor"]["type"],
      ...(r.actorId ? { id: r.actorId } : {}),
      ...(r.actorName ? { name: r.actorName } : {}),
    },
    surface: r.surface as AuditEvent["surface"],
    ...(r.address ? { address: r.address } : {}),
    ...(r.requestId ? { requestId: r.requestId } : {}),
    createdAt: r.createdAt,
  };
}
