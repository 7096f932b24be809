export { type OpenWriteOptions, type SpaceEntry, SpaceFiles, type SpaceWriter } from "./files";
export { clientPath, FOLDER_MARKER, FIXED_FOLDERS, isArrivalPath, resolveClientPath } from "./paths";
export type { ObjectReader } from "./reader";
