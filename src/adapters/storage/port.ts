/**
 * The object store: where originals, processed files, rejects and (later)
 * documents live. Two implementations behind this one interface: local disk
 * under DATA_DIR (the embedded default) and S3. Keys are `/`-separated
 * paths without a leading slash; callers build them (src/adapters/storage/keys.ts).
 */
export type Body = Uint8Array | string | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface ObjectInfo {
  key: string;
  size: number;
  etag: string;
  contentType: string;
  updatedAt: Date;
}

export interface PresignOptions {
  method: "GET" | "PUT";
  /** Seconds the link stays valid. */
  expiresIn: number;
  /** GET: served as an attachment with this name. */
  filename?: string;
  /** PUT: the content type the uploader must send; GET: the type served. */
  contentType?: string;
  /** PUT: the body must be exactly this many bytes (signed, as S3 signs a content length); a larger body is refused before it is read. */
  size?: number;
}

export interface MultipartUpload {
  uploadId: string;
  key: string;
}

export interface CompletedPart {
  partNumber: number;
  etag: string;
}

/** Told where an arriving body's bytes go while they are written (src/engine/stripes reads them as they come). */
export interface WriteObserver {
  /** The file the bytes are written to, once it exists (a temp file; it is renamed into place at the end). */
  opened(path: string): void;
  /** Bytes written to it so far (readable there from now on). */
  wrote(total: number): void;
  /** Every byte is written: the final size (the file is then fsynced and put in place). */
  done(size: number): void;
}

/**
 * What a store on a local file system offers a writer that makes its own
 * files (the engine's workers write processed files with plain synchronous
 * writes): a temp path on the store's file system, and `putFile` to rename
 * a finished file into place. S3 has none: writers stream into `put`.
 */
export interface FileStore {
  /** Files written leave the page cache once on disk (src/adapters/storage/page-cache.ts). */
  readonly dropWritten: boolean;
  /** A fresh path in the store's temp folder; the folder exists. */
  tempPath(): string;
  /** Puts a finished file written at a `tempPath()` under `key` (fsync, rename); its etag is computed when first asked for. */
  putFile(key: string, path: string, opts: { contentType?: string }): Promise<Omit<ObjectInfo, "etag">>;
}

export interface ObjectStore {
  readonly kind: "local" | "s3";
  /** Present on a store on the local file system: writers may make their files in place (see FileStore). */
  readonly files?: FileStore;
  /** Writes the whole body, atomically: readers see the old object or the new one, never half of it. */
  put(key: string, body: Body, opts?: { contentType?: string }): Promise<ObjectInfo>;
  /**
   * `put` of a file arriving from a client, whose etag nobody needs yet: the
   * local store computes the etag when first asked for instead of while the
   * bytes arrive, and tells `observe` where they go. S3 puts as usual.
   */
  putArriving(key: string, body: Body, opts?: { contentType?: string; observe?: WriteObserver }): Promise<Omit<ObjectInfo, "etag">>;
  /** The object's bytes, streamed; null when it does not exist. `range` is inclusive, as HTTP ranges are. */
  get(key: string, opts?: { range?: { start: number; end?: number } }): Promise<ReadableStream<Uint8Array> | null>;
  stat(key: string): Promise<ObjectInfo | null>;
  /** Whether an object is at the key: `stat` without its metadata (the local store may have to compute an etag for that). */
  exists(key: string): Promise<boolean>;
  /** Objects whose key starts with `prefix`, in key order, a page at a time. */
  list(prefix: string, opts?: { after?: string; limit?: number; delimiter?: string }): Promise<{ objects: ObjectInfo[]; prefixes: string[]; next: string | null }>;
  copy(from: string, to: string): Promise<void>;
  move(from: string, to: string): Promise<void>;
  /** Deleting a missing object is not an error. */
  delete(key: string): Promise<void>;
  deletePrefix(prefix: string): Promise<number>;
  /** A URL that a plain HTTP client can use without the API key. */
  presign(key: string, opts: PresignOptions): Promise<string>;
  createMultipart(key: string, opts?: { contentType?: string }): Promise<MultipartUpload>;
  presignPart(upload: MultipartUpload, partNumber: number, expiresIn: number): Promise<string>;
  completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<ObjectInfo>;
  abortMultipart(upload: MultipartUpload): Promise<void>;
}

/** Serialisable settings, so a worker thread can open the same store. */
export interface S3Settings {
  bucket: string;
  region: string;
  endpoint?: string;
  forcePathStyle?: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
}

export type StorageConfig =
  | {
      kind: "local";
      root: string;
      publicUrl: string;
      signingKey: string;
      /** Files written leave the page cache once on disk (STORAGE_CACHE_WRITES=false, the default; src/adapters/storage/page-cache.ts). */
      dropWritten?: boolean;
    }
  | ({ kind: "s3" } & S3Settings);
