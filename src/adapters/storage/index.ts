import type { Config } from "../../config";
import type { ObjectStore, StorageConfig } from "./port";

// PENDING(storage helper): replaced by the local and S3 implementations.
export function storageConfigFrom(config: Config, signingKey: Buffer): StorageConfig {
  return { kind: "local", root: `${config.dataDir}/objects`, publicUrl: config.publicUrl, signingKey: signingKey.toString("base64") };
}

export function createObjectStore(_cfg: StorageConfig): ObjectStore {
  return new Proxy({} as ObjectStore, {
    get: (_t, prop) => (prop === "kind" ? "local" : () => Promise.reject(new Error("storage: implementation pending"))),
  });
}
