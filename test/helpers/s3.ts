import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import type { StorageConfig } from "../../src/adapters/storage/port";

/*
 * s3rver is the S3-compatible server the tests run on loopback. Three things
 * in it are patched here, each where it differs from S3 (or from Bun), so the
 * one contract suite can hold both stores to S3's behaviour:
 * - its list continuation tokens use the cipher "des", which Bun's crypto
 *   names only "des-cbc" (without the alias every truncated list is a 500);
 * - it lists in directory-read order, where S3 lists in key order (and pages
 *   by key, so out-of-order listing also loses entries between pages), and
 *   with a delimiter it skips folders that hold only folders (`a/b/c/x`
 *   listed under `a/` with `/` gives no `a/b/`): the walk below is sorted
 *   by key and visits every folder;
 * - it has no AbortMultipartUpload (DELETE ?uploadId answers 405).
 * It also does not check signatures: those are tested on the local store.
 */
const nodeCrypto = require("node:crypto") as typeof import("node:crypto");
for (const name of ["createCipheriv", "createDecipheriv"] as const) {
  const original = nodeCrypto[name] as (...args: unknown[]) => unknown;
  // A function, not an arrow: callers may use `new` (openpgp does), which an arrow function refuses.
  (nodeCrypto as Record<string, unknown>)[name] = function (algorithm: unknown, ...rest: unknown[]) {
    return original(algorithm === "des" ? "des-cbc" : algorithm, ...rest);
  };
}

// Must be replaced before s3rver's store module loads: it destructures `walk` on load.
const utils = require("s3rver/lib/utils") as { walk: (dir: string) => Generator<string> };
const sortName = (name: string, isDir: boolean) => (isDir ? `${name}/` : name.replace(/\._S3rver_[^/]*$/, ""));
utils.walk = function* walk(dir: string): Generator<string> {
  const entries = readdirSync(dir).map((name) => {
    const isDir = statSync(posix.join(dir, name)).isDirectory();
    return { name, isDir, key: Buffer.from(sortName(name, isDir)) };
  });
  entries.sort((a, b) => Buffer.compare(a.key, b.key) || (a.name < b.name ? -1 : 1));
  for (const e of entries) {
    const path = posix.join(dir, e.name);
    if (!e.isDir) yield path;
    else yield* walk(path);
  }
};

interface KoaContext {
  method: string;
  path: string;
  query: Record<string, string | undefined>;
  status: number;
  type: string;
  body: unknown;
}
interface S3rverInstance {
  middleware: ((ctx: KoaContext, next: () => Promise<void>) => Promise<void>)[];
  store: { getResourcePath(bucket: string, key: undefined, resource: string): string };
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;
// s3rver ships no types; this is the part of it the tests use.
const S3rver = require("s3rver") as S3rverClass;

export interface TestS3 {
  config: Extract<StorageConfig, { kind: "s3" }>;
  /** The same settings as environment variables, for a Harness or a child process. */
  env: Record<string, string>;
  endpoint: string;
  stop(): Promise<void>;
}

/** A real S3-compatible server (s3rver) on 127.0.0.1, port 0, with one empty bucket in a temp folder. */
export async function startS3(bucket = "fps-test"): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), "fps-s3-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: process.env.S3RVER_LOG !== "1",
    directory,
    configureBuckets: [{ name: bucket }],
  });
  // AbortMultipartUpload, placed before s3rver's router (Koa composes middleware when the server starts).
  server.middleware.unshift(async (ctx, next) => {
    const uploadId = ctx.query.uploadId;
    if (ctx.method !== "DELETE" || uploadId === undefined) return next();
    const dir = join(server.store.getResourcePath(ctx.path.split("/")[1]!, undefined, "uploads"), uploadId);
    if (!/^[a-f0-9]+$/.test(uploadId) || !statSync(dir, { throwIfNoEntry: false })) {
      ctx.status = 404;
      ctx.type = "application/xml";
      ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
      return;
    }
    await rm(dir, { recursive: true, force: true });
    ctx.status = 204;
  });
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
