// The Node.js (and Bun) entry: the browser-safe client plus files from disk.
import { openAsBlob } from "node:fs";
import { basename } from "node:path";

export * from "./index.js";

const TYPES: Record<string, string> = {
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  json: "application/json",
  ndjson: "application/x-ndjson",
  xml: "application/xml",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  gz: "application/gzip",
  zip: "application/zip",
  txt: "text/plain",
};

/** A file on disk as a Blob that is read as it is sent (never loaded whole), with its name and a content type from its extension. */
export async function fileBlob(path: string): Promise<File> {
  const ext = basename(path).split(".").pop()?.toLowerCase() ?? "";
  const blob = await openAsBlob(path, { type: TYPES[ext] ?? "application/octet-stream" });
  return Object.assign(blob, { name: basename(path), lastModified: Date.now(), webkitRelativePath: "" }) as File;
}
