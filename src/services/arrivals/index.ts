export { listArrivals } from "./list-arrivals";
export { presentArrival } from "./present";
export * from "./shapes";
