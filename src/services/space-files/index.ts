export { enqueueArrival, giveUpHostedArrival, HOSTED_ARRIVAL_ATTEMPTS, HOSTED_ARRIVAL_JOB, HostedArrivalPayload, handleHostedArrival } from "../run-path/doors/space-arrival";
export { type OpenWriteOptions, type SpaceEntry, SpaceFiles, type SpaceWriter } from "./files";
export { clientPath, FOLDER_MARKER, FIXED_FOLDERS, isArrivalPath, resolveClientPath } from "./paths";
export type { ObjectReader } from "./reader";
