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
  const s3 = (config as Config & { s3?: Omit<Extract<StorageConfig, { kind: "s3" }>, "kind"> | null }).s3;
  if (s3) return { kind: "s3", ...s3 };
  return { kind: "local", root: `${config.dataDir}/objects`, publicUrl: config.publicUrl, signingKey: deriveSigningKey(encryptionKey).toString("base64") };
}

export function createObjectStore(cfg: StorageConfig, opts: LocalStoreOptions = {}): ObjectStore {
  if (cfg.kind === "local") return new LocalObjectStore(cfg, opts);
  throw new Error("storage: S3 implementation pending");
}
