export { getProcessedJson, type ProcessedJson } from "./get-processed-json";
export { getRunFileLink } from "./get-run-file-link";
export { searchFiles } from "./search-files";
export * from "./shapes";
