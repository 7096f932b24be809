import { createHash, randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AppError } from "../../../domain/errors";
import type { Body, CompletedPart, MultipartUpload, ObjectInfo } from "../port";
import { type AtomicFiles, isMissing, statFile } from "./files";
import type { LocalLinks } from "./links";

/** S3's multipart rules, kept here too so a client that works on one works on the other. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
export const MAX_PARTS = 10_000;

interface UploadRecord {
  key: string;
  contentType?: string;
}

/**
 * Multipart uploads as S3 has them, on disk: each upload a folder under
 * `sys/uploads/<uploadId>` with its record and its parts, joined into one
 * atomic file on completion.
 */
export class LocalMultipart {
  constructor(
    private readonly disk: AtomicFiles,
    private readonly links: LocalLinks,
  ) {}

  private uploadDir(uploadId: string): string {
    if (!/^[a-f0-9]{32}$/.test(uploadId)) throw new AppError("not_found", `no multipart upload '${String(uploadId).slice(0, 64)}'`);
    return join(this.disk.sys, "uploads", uploadId);
  }

  async createMultipart(key: string, opts: { contentType?: string } = {}): Promise<MultipartUpload> {
    this.disk.objectPath(key);
    const uploadId = randomUUID().replaceAll("-", "");
    const dir = this.uploadDir(uploadId);
    await mkdir(dir, { recursive: true });
    const record: UploadRecord = { key, contentType: opts.contentType };
    await writeFile(join(dir, "upload.json"), JSON.stringify(record));
    return { uploadId, key };
  }

  private async uploadRecord(upload: MultipartUpload): Promise<{ dir: string; record: UploadRecord }> {
    const dir = this.uploadDir(upload.uploadId);
    let record: UploadRecord;
    try {
      record = JSON.parse(await readFile(join(dir, "upload.json"), "utf8")) as UploadRecord;
    } catch {
      throw new AppError("not_found", `no multipart upload '${upload.uploadId}'`);
    }
    if (record.key !== upload.key) throw new AppError("not_found", `no multipart upload '${upload.uploadId}' for '${upload.key}'`);
    return { dir, record };
  }

  async presignPart(upload: MultipartUpload, partNumber: number, expiresIn: number): Promise<string> {
    assertPartNumber(partNumber);
    this.disk.objectPath(upload.key);
    this.uploadDir(upload.uploadId);
    return this.links.link(upload.key, { method: "PUT", key: upload.key, expires: this.links.expiry(expiresIn), uploadId: upload.uploadId, partNumber });
  }

  /**
   * Stores one part (what a presigned part URL does). Each part file carries
   * its md5 in its name: a re-sent part replaces the earlier one, and
   * completion picks exactly the bytes whose ETag the client lists.
   */
  async putPart(upload: MultipartUpload, partNumber: number, body: Body): Promise<{ etag: string; size: number }> {
    assertPartNumber(partNumber);
    const { dir } = await this.uploadRecord(upload);
    const { tmp, md5 } = await this.disk.writeTemp(body, { md5: true });
    return this.placePart(upload, dir, partNumber, tmp, md5!);
  }

  /** `putPart` of a request's body of known length, written in native code (see writeTempFromRequest). */
  async putPartRequest(upload: MultipartUpload, partNumber: number, request: Request, length: number): Promise<{ etag: string; size: number }> {
    assertPartNumber(partNumber);
    const { dir } = await this.uploadRecord(upload);
    const { tmp, md5 } = await this.disk.writeTempFromRequest(request, length);
    return this.placePart(upload, dir, partNumber, tmp, md5);
  }

  private async placePart(upload: MultipartUpload, dir: string, partNumber: number, tmp: string, md5: string): Promise<{ etag: string; size: number }> {
    const name = `${partNumber}-${md5}`;
    try {
      await rename(tmp, join(dir, name));
    } catch (e) {
      await rm(tmp, { force: true });
      if (isMissing(e)) throw new AppError("not_found", `no multipart upload '${upload.uploadId}'`);
      throw e;
    }
    for (const other of await readdir(dir)) {
      if (other.startsWith(`${partNumber}-`) && other !== name) await rm(join(dir, other), { force: true });
    }
    const { size } = await stat(join(dir, name));
    return { etag: md5, size };
  }

  async completeMultipart(upload: MultipartUpload, parts: CompletedPart[]): Promise<ObjectInfo> {
    const { dir, record } = await this.uploadRecord(upload);
    if (parts.length === 0) throw new AppError("invalid_input", "parts: at least one part is required");
    const files: { path: string; size: number; md5: string }[] = [];
    let previous = 0;
    for (const [i, part] of parts.entries()) {
      if (part.partNumber <= previous) throw new AppError("invalid_input", `parts[${i}].partNumber: parts must be listed in ascending order without repeats`);
      previous = part.partNumber;
      const md5 = stripQuotes(part.etag).toLowerCase();
      const path = join(dir, `${part.partNumber}-${md5}`);
      const st = /^[a-f0-9]{32}$/.test(md5) ? await statFile(path) : null;
      if (!st) throw new AppError("invalid_input", `parts[${i}]: no part ${part.partNumber} with ETag ${part.etag} was uploaded`);
      files.push({ path, size: st.size, md5 });
    }
    for (const [i, f] of files.slice(0, -1).entries()) {
      if (f.size < MIN_PART_BYTES) throw new AppError("invalid_input", `parts[${i}]: every part but the last must be at least ${MIN_PART_BYTES} bytes`);
    }
    const tmp = await this.disk.concatTemp(files.map((f) => f.path));
    // The ETag S3 gives a multipart object: md5 of the parts' binary md5s, then the part count.
    const etag = `${createHash("md5")
      .update(Buffer.concat(files.map((f) => Buffer.from(f.md5, "hex"))))
      .digest("hex")}-${files.length}`;
    const info = await this.disk.commit(tmp, upload.key, { etag, contentType: record.contentType });
    await rm(dir, { recursive: true, force: true });
    return info;
  }

  async abortMultipart(upload: MultipartUpload): Promise<void> {
    await rm(this.uploadDir(upload.uploadId), { recursive: true, force: true });
  }
}

function assertPartNumber(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > MAX_PARTS) throw new AppError("invalid_input", `partNumber: must be a whole number from 1 to ${MAX_PARTS}`);
}

const stripQuotes = (etag: string) => String(etag).replace(/^W\//, "").replace(/^"|"$/g, "");
