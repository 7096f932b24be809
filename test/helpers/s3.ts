import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StorageConfig } from "../../src/adapters/storage/port";

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;
// s3rver ships no types; this is the part of it the tests use.
const S3rver = require("s3rver") as S3rverClass;

// s3rver encrypts list continuation tokens with the cipher it calls "des", which Bun's crypto
// names only "des-cbc": without the alias every truncated listing is a 500 from the server.
const nodeCrypto = require("node:crypto") as typeof import("node:crypto");
for (const name of ["createCipheriv", "createDecipheriv"] as const) {
  const original = nodeCrypto[name] as (...args: unknown[]) => unknown;
  (nodeCrypto as Record<string, unknown>)[name] = (algorithm: unknown, ...rest: unknown[]) =>
    original(algorithm === "des" ? "des-cbc" : algorithm, ...rest);
}

export interface TestS3 {
  config: Extract<StorageConfig, { kind: "s3" }>;
  /** The same settings as environment variables, for a Harness or a child process. */
  env: Record<string, string>;
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * A real S3-compatible server (s3rver) on loopback, port 0, with one empty
 * bucket in a temp folder. It enforces link expiry but not signatures, so
 * signature checks are tested on the local store.
 */
export async function startS3(bucket = "fps-test"): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), "fps-s3-"));
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: process.env.S3RVER_LOG !== "1", directory, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const config = {
    kind: "s3" as const,
    bucket,
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
  };
  return {
    config,
    endpoint,
    env: {
      S3_BUCKET: bucket,
      S3_REGION: config.region,
      S3_ENDPOINT: endpoint,
      S3_FORCE_PATH_STYLE: "true",
      S3_ACCESS_KEY_ID: config.accessKeyId,
      S3_SECRET_ACCESS_KEY: config.secretAccessKey,
    },
    async stop() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
