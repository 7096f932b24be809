export * from "./shapes";
export { watchRuns } from "./watch-runs";
