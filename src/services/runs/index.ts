export { acknowledgeRun } from "./acknowledge-run";
export { getRun } from "./get-run";
export { listPipelineRuns } from "./list-pipeline-runs";
export { listRuns } from "./list-runs";
export { pipelineForFiles } from "../run-path/ingest/pipeline-for-files";
export { DELETED_PIPELINE, presentRun, RUN_JOB, RUN_JOB_ATTEMPTS, type RunRecord } from "./record";
export { retryRun } from "./retry-run";
export * from "./shapes";
export { reprocessRun } from "./reprocess-run";
