export * from "./watch-shapes";
export { watchRuns } from "./watch-runs";
