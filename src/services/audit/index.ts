export { type AuditEventRow, listAuditEvents } from "./list-audit-events";
export { presentAuditEvent } from "./present";
export { AUDIT_PURGE_CRON, AUDIT_PURGE_JOB, purgeAuditEvents } from "./purge";
export { type AuditChange, auditActorOf, type ChangedBy, fieldsOf, recordAudit, recordStoreChange } from "./record";
export * from "./shapes";
