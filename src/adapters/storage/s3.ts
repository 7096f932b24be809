import { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { AppError } from "../../domain/errors";
import { chunksOf } from "./body";
import { attachment } from "./disposition";
import { assertKey, assertPrefix } from "./keys";
import type { Body, CompletedPart, MultipartUpload, ObjectInfo, ObjectStore, PresignOptions, StorageConfig } from "./port";

type S3Config = Extract<StorageConfig, { kind: "s3" }>;

const LIST_MAX = 1000;
/** Streamed puts go up in parts of this size, two at a time: memory stays near 16 MiB whatever the object's size. */
const UPLOAD_PART_BYTES = 8 * 1024 * 1024;
const MAX_PARTS = 10_000;
const MAX_LINK_SECONDS = 7 * 24 * 3600;

/**
 * The object store on S3 or an S3-compatible service. S3 itself gives the
 * guarantees the local store works for: a PUT or a completed multipart upload
 * appears whole or not at all, and its presigned URLs are signed, expiring and
 * bound to method and key.
 */
export class S3ObjectStore implements ObjectStore {
  readonly kind = "s3" as const;
  readonly client: S3Client;
  private readonly bucket: string;

  constructor(cfg: S3Config) {
    this.bucket = cfg.bucket;
    this.client = new S3Client({
      region: cfg.region,
      endpoint: cfg.endpoint,
      forcePathStyle: cfg.forcePathStyle,
      credentials: cfg.accessKeyId && cfg.secretAccessKey ? { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey } : undefined,
      // Checksums only where S3 requires them: the default (CRC32 with aws-chunked trailers on every
      // upload) is not understood by many S3-compatible services, and would be baked into presigned PUTs.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
  }

  putArriving(key: string, body: Body, opts: { contentType?: string } = {}): Promise<ObjectInfo> {
    return this.put(key, body, opts);
  }

  async put(key: string, body: Body, opts: { contentType?: string } = {}): Promise<ObjectInfo> {
    assertKey(key);
    const contentType = opts.contentType || guessType(key);
    if (typeof body === "string" || body instanceof Uint8Array) {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
    } else {
      // Unknown length: lib-storage sends one PUT if it fits a part, else a multipart upload it aborts on error.
      await new Upload({
        client: this.client,
        params: { Bucket: this.bucket, Key: key, Body: Readable.from(chunksOf(body)), ContentType: contentType },
        partSize: UPLOAD_PART_BYTES,
        queueSize: 2,
        leavePartsOnError: false,
      }).done();
    }
    const info = await this.stat(key);
    if (!info) throw new Error(`storage: '${key}' was written but cannot be read back`);
    return info;
  }

  async get(key: string, opts: { range?: { start: number; end?: number } } = {}): Promise<ReadableStream<Uint8Array> | null> {
    assertKey(key);
    const r = opts.range;
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: r ? `bytes=${Math.max(0, r.start)}-${r.end ?? ""}` : undefined }),
      );
      if (!out.Body) return emptyStream();
      return out.Body.transformToWebStream() as ReadableStream<Uint8Array>;
    } catch (e) {
      if (isNotFound(e)) return null;
      // A range starting past the end: the local store answers no bytes, so does this one.
      if (errorName(e) === "InvalidRange") return emptyStream();
      throw e;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertKey(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        key,
        size: out.ContentLength ?? 0,
        etag: stripQuotes(out.ETag ?? ""),
        contentType: out.ContentType ?? "application/octet-stream",
        updatedAt: out.LastModified ?? new Date(0),
      };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /**
   * Paged by key, not by S3's continuation token: `next` is the last key or
   * prefix returned, exactly as on the local store, and the page is cut here
   * to `limit` entries counting objects and prefixes together (as S3 does;
   * some compatible servers count only objects). Listings do not carry
   * content types: listed objects have theirs from the key's extension;
   * `stat` gives the stored one.
   */
  async list(prefix: string, opts: { after?: string; limit?: number; delimiter?: string } = {}) {
    assertPrefix(prefix);
    const limit = Math.max(1, Math.min(LIST_MAX, opts.limit ?? LIST_MAX));
    const delimiter = opts.delimiter || undefined;
    const after = opts.after || undefined;
    // After a rolled-up prefix, skip every key under it: none sorts after the highest code point.
    const startAfter = after !== undefined && delimiter && after.endsWith(delimiter) ? `${after}\u{10FFFF}` : after;
    const out = await this.client.send(
      new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix || undefined, Delimiter: delimiter, MaxKeys: limit, StartAfter: startAfter }),
    );
    const entries: { name: string; object?: ObjectInfo }[] = [
      ...(out.Contents ?? []).map((o) => ({
        name: o.Key!,
        object: {
          key: o.Key!,
          size: o.Size ?? 0,
          etag: stripQuotes(o.ETag ?? ""),
          contentType: guessType(o.Key!),
          updatedAt: o.LastModified ?? new Date(0),
        },
      })),
      ...(out.CommonPrefixes ?? []).map((p) => ({ name: p.Prefix! })),
    ]
      .filter((e) => after === undefined || compareKeys(e.name, after) > 0)
      .sort((a, b) => compareKeys(a.name, b.name));
    const page = entries.slice(0, limit);
    return {
      objects: page.flatMap((e) => (e.object ? [e.object] : [])),
      prefixes: page.filter((e) => !e.object).map((e) => e.name),
      next: page.length > 0 && (entries.length > limit || out.IsTruncated) ? page[page.length - 1]!.name : null,
    };
  }

  async copy(from: string, to: string): Promise<void> {
    assertKey(from);
    assertKey(to);
    try {
      await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: `${this.bucket}/${encodeKey(from)}` }));
    } catch (e) {
      if (isNotFound(e)) throw new AppError("not_found", `object '${from}' not found`);
      throw e;
    }
  }

  /** S3 has no rename: a copy, then the delete. A reader sees the object at one key or both, never at neither. */
  async move(from: string, to: string): Promise<void> {
    if (from === to) {
      if (!(await this.stat(from))) throw new AppError("not_found", `object '${from}' not found`);
      return;
    }
    await this.copy(from, to);
    await this.delete(from);
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async deletePrefix(prefix: string): Promise<number> {
    if (prefix === "") throw new AppError("invalid_input", "prefix: must not be empty when deleting (that would delete every object)");
    assertPrefix(prefix);
    let deleted = 0;
    // Always the first page again: the previous page's objects are gone.
    for (;;) {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: LIST_MAX }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length === 0) return deleted;
      const out = await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
      if (out.Errors?.length) throw new Error(`storage: could not delete '${out.Errors[0]!.Key}': ${out.Errors[0]!.Message}`);
      deleted += keys.length;
    }
  }

  async presign(key: string, opts: PresignOptions): Promise<string> {
    assertKey(key);
    const expiresIn = linkSeconds(opts.expiresIn);
    const command =
      opts.method === "GET"
        ? new GetObjectCommand({
            Bucket: this.bucket,
            Key: key,
            ResponseContentDisposition: opts.filename ? attachment(opts.filename) : undefined,
            ResponseContentType: opts.contentType,
          })
        : new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentType: opts.contentType, ContentLength: opts.size });
    // content-type and content-length are signed as headers, so an uploader must send exactly the type and size bound into the link.
    const signed = new Set<string>();
    if (opts.method === "PUT" && opts.contentType) signed.add("content-type");
    if (opts.method === "PUT" && opts.size !== undefined) signed.add("content-length");
    return getSignedUrl(this.client, command, { expiresIn, ...(signed.size > 0 ? { signableHeaders: signed } : {}) });
  }

  async createMultipart(key: string, opts: { contentType?: string } = {}): Promise<MultipartUpload> {
    assertKey(key);
    const out = await this.client.send(
      new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: opts.contentType || guessType(key) }),
    );
    return { uploadId: out.UploadId!, key };
  }

  async presignPart(upload: MultipartUpload, partNumber: number, expiresIn: number): Promise<string> {
    assertKey(upload.key);
    assertPartNumber(partNumber);
    return getSignedUrl(
      this.client,
      new UploadPartCommand({ Bucket: this.bucket, Key: upload.key, UploadId: upload.uploadId, PartNumber: partNumber }),
      { expiresIn: linkSeconds(expiresIn) },
    );
  }

  async completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<ObjectInfo> {
    assertKey(upload.key);
    if (parts.length === 0) throw new AppError("invalid_input", "parts: at least one part is required");
    let previous = 0;
    for (const [i, part] of parts.entries()) {
      if (part.partNumber <= previous) throw new AppError("invalid_input", `parts[${i}].partNumber: parts must be listed in ascending order without repeats`);
      previous = part.partNumber;
    }
    try {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: upload.key,
          UploadId: upload.uploadId,
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: `"${stripQuotes(p.etag)}"` })) },
        }),
      );
    } catch (e) {
      const name = errorName(e);
      if (name === "NoSuchUpload") throw new AppError("not_found", `no multipart upload '${upload.uploadId}'`);
      if (name === "InvalidPart" || name === "InvalidPartOrder" || name === "EntityTooSmall")
        throw new AppError("invalid_input", `parts: ${(e as Error).message}`);
      throw e;
    }
    const info = await this.stat(upload.key);
    if (!info) throw new Error(`storage: '${upload.key}' was completed but cannot be read back`);
    return info;
  }

  async abortMultipart(upload: MultipartUpload): Promise<void> {
    assertKey(upload.key);
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.key, UploadId: upload.uploadId }));
    } catch (e) {
      if (errorName(e) !== "NoSuchUpload" && !isNotFound(e)) throw e;
    }
  }

  close(): void {
    this.client.destroy();
  }
}

function linkSeconds(expiresIn: number): number {
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_LINK_SECONDS)
    throw new AppError("invalid_input", `expiresIn: must be a whole number of seconds from 1 to ${MAX_LINK_SECONDS}`);
  return expiresIn;
}

function assertPartNumber(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > MAX_PARTS) throw new AppError("invalid_input", `partNumber: must be a whole number from 1 to ${MAX_PARTS}`);
}

function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

/** S3 orders keys by their UTF-8 bytes. */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

const stripQuotes = (etag: string) => String(etag).replace(/^W\//, "").replace(/^"|"$/g, "");

function errorName(e: unknown): string | undefined {
  return e instanceof S3ServiceException ? e.name : (e as { name?: string; Code?: string })?.Code ?? (e as Error)?.name;
}

function isNotFound(e: unknown): boolean {
  const name = errorName(e);
  return name === "NoSuchKey" || name === "NotFound" || (e as S3ServiceException)?.$metadata?.httpStatusCode === 404;
}

function guessType(key: string): string {
  return Bun.file(key).type || "application/octet-stream";
}

function emptyStream(): ReadableStream<Uint8Array> {
  return new ReadableStream({ start: (c) => c.close() });
}
