import type { Config } from "../../config";
import { LocalObjectStore, type LocalStoreOptions } from "./local";
import type { ObjectStore, StorageConfig } from "./port";
import { deriveSigningKey } from "./signing";

export type { ObjectStore, StorageConfig } from "./port";

/**
 * S3 when S3_BUCKET is set (every instance then shares one bucket), else the
 * local disk under DATA_DIR. The local store signs its links with a key
 * derived from the encryption key, never with the encryption key itself.
 */
export function storageConfigFrom(config: Config, encryptionKey: Buffer): StorageConfig {
  if (config.s3) return { kind: "s3", ...config.s3 };
  return {
    kind: "local",
    root: `${config.dataDir}/objects`,
    publicUrl: config.publicUrl,
    signingKey: deriveSigningKey(encryptionKey).toString("base64"),
    dropWritten: !config.storageCacheWrites,
  };
}

/**
 * Opens the store the settings describe; worker threads call this with the
 * same settings as the service. The S3 client (~5 MB of heap, 44,000 cells)
 * is loaded only when S3 is configured.
 */
export function createObjectStore(cfg: StorageConfig, opts: LocalStoreOptions = {}): ObjectStore {
  if (cfg.kind === "local") return new LocalObjectStore(cfg, opts);
  const { S3ObjectStore } = require("./s3") as typeof import("./s3");
  return new S3ObjectStore(cfg);
}

/**
 * One open store per distinct configuration (a service has a handful at
 * most): the engine's pool and its worker threads open stores from the
 * settings each request carries.
 */
export function storeCache(): (cfg: StorageConfig) => ObjectStore {
  const stores = new Map<string, ObjectStore>();
  return (cfg) => {
    const key = JSON.stringify(cfg);
    let store = stores.get(key);
    if (!store) {
      store = createObjectStore(cfg);
      stores.set(key, store);
    }
    return store;
  };
}
