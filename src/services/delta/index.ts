export { getRunDelta } from "./get-run-delta";
export * from "./shapes";
