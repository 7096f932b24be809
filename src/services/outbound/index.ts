export { completeOutboundUpload, uploadRunKey } from "./complete-upload";
export { createOutboundUpload } from "./create-upload";
export { ENDED_RETENTION_MS, expireOutboundUploads, OUTBOUND_EXPIRE_CRON, OUTBOUND_EXPIRE_JOB } from "./expire-uploads";
export { getOutboundUpload } from "./get-upload";
export { type PartRows, putOutboundPart } from "./put-part";
export { partKey, partsPrefix } from "./record";
export * from "./shapes";
export { ListOutboundUploadsQuery, listOutboundUploads } from "./list-uploads";
export { SendOutboundFileInput, sendOutboundFile } from "./send-file";
