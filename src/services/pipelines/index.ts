export { createPipeline } from "./create-pipeline";
export { deletePipeline } from "./delete-pipeline";
export { getPipeline } from "./get-pipeline";
export { listPipelines } from "./list-pipelines";
export { type PipelineRecord, presentPipeline } from "./record";
export { updatePipeline } from "./update-pipeline";
export * from "./shapes";
export { previewDraft, previewPipeline } from "./preview-pipeline";
export * from "./preview-shapes";
