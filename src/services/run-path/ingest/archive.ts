import { isUtf8 } from "node:buffer";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline as pipe } from "node:stream/promises";
import yauzl from "yauzl";
import { AppError } from "../../../domain/errors";
import { formatFromName } from "../../../engine/parse/detect";
import { withoutPgpExtension } from "../../../engine/parse/pgp";
import { RATIO_FLOOR_BYTES } from "../../../engine/types";

/** A zip member that becomes its own run. */
export interface ArchiveMember {
  /** The member's path inside the archive. */
  member: string;
  /** Its last path component: the member run's file name. */
  filename: string;
  size: number;
  entry: yauzl.Entry;
}

export interface ArchivePlan {
  accepted: ArchiveMember[];
  /** Members that do not become runs, and why. */
  rejected: { member: string; reason: string }[];
}

export interface ArchiveLimits {
  maxMembers: number;
  maxBytes: number;
  maxRatio: number;
}

/** An upload named `.zip` is an archive of files to run; an XLSX workbook (also a zip) is not. */
export function isArchiveName(filename: string): boolean {
  return /\.zip$/i.test(filename);
}

/** A member's format is one the pipeline reads: known by its extension, or any non-archive name when the pipeline fixes the format. */
function accepts(name: string, pipelineFormat: string | undefined): string | null {
  if (/\.(zip|jar|7z|rar|tar|tgz)$/i.test(name)) return "an archive inside an archive is not opened (nesting is refused)";
  let known: string | undefined;
  try {
    known = formatFromName(withoutPgpExtension(name));
  } catch (e) {
    return (e as Error).message;
  }
  if (known || pipelineFormat) return null;
  return "not a format the pipeline reads (csv, tsv, xlsx, json, ndjson, xml, optionally .gz or .pgp)";
}

/**
 * Opens a stored zip from a temporary file and decides from its central
 * directory alone, before anything is inflated, which members become runs.
 * The whole archive is refused (400, nothing kept) when it declares too
 * many members, more bytes than MAX_DECOMPRESSED_BYTES in total, or a
 * member inflating beyond MAX_DECOMPRESSION_RATIO (a zip bomb). Member
 * names that are absolute or climb out (`../`) are rejected, never used as
 * paths: a member run keeps only the name's last component.
 */
export async function openArchive(body: ReadableStream<Uint8Array>, limits: ArchiveLimits, pipelineFormat: string | undefined) {
  const dir = await mkdtemp(join(tmpdir(), "fps-zip-"));
  const file = join(dir, "archive.zip");
  await pipe(body as never, createWriteStream(file));
  let zip: yauzl.ZipFile;
  try {
    zip = await new Promise<yauzl.ZipFile>((ok, no) =>
      yauzl.open(file, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true }, (e, z) => (e ? no(e) : ok(z!))),
    );
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw new AppError("invalid_input", `file: not a readable zip archive (${(e as Error).message})`);
  }
  const close = async () => {
    zip.close();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    if (zip.entryCount > limits.maxMembers) {
      throw new AppError("invalid_input", `file: the archive holds ${zip.entryCount} members; at most ${limits.maxMembers} are accepted (MAX_ARCHIVE_MEMBERS)`);
    }
    const plan: ArchivePlan = { accepted: [], rejected: [] };
    let total = 0;
    let all: yauzl.Entry[];
    try {
      all = await entries(zip);
    } catch (e) {
      throw new AppError("invalid_input", `file: not a readable zip archive (${(e as Error).message})`);
    }
    for (const entry of all) {
      // Names are decoded here, not by yauzl, whose check of '..' and absolute paths would refuse the whole archive instead of the member.
      const raw = entry.fileName as unknown as Buffer;
      const name = (entry.generalPurposeBitFlag & 0x800) !== 0 || isUtf8(raw) ? raw.toString("utf8") : raw.toString("latin1");
      if (name.endsWith("/")) continue;
      const ratio = entry.compressedSize > 0 ? entry.uncompressedSize / entry.compressedSize : entry.uncompressedSize > 0 ? Infinity : 1;
      if (entry.uncompressedSize > RATIO_FLOOR_BYTES && ratio > limits.maxRatio) {
        throw new AppError(
          "invalid_input",
          `file: member '${name}' would inflate ${Math.round(ratio)}-fold (${entry.uncompressedSize} bytes from ${entry.compressedSize}; MAX_DECOMPRESSION_RATIO = ${limits.maxRatio}): the archive looks like a zip bomb and was refused`,
        );
      }
      total += entry.uncompressedSize;
      if (total > limits.maxBytes) {
        throw new AppError("invalid_input", `file: the archive's members inflate to more than ${limits.maxBytes} bytes (MAX_DECOMPRESSED_BYTES); it was refused`);
      }
      if (name.startsWith("/") || /^[a-z]:/i.test(name) || name.split(/[\\/]/).includes("..") || name.includes("\0")) {
        plan.rejected.push({ member: name, reason: "its path is absolute or leaves the archive ('..'); not extracted" });
        continue;
      }
      const filename = name.split(/[\\/]/).pop()!;
      if (filename.startsWith(".") || name.startsWith("__MACOSX/")) {
        plan.rejected.push({ member: name, reason: "a hidden or system file" });
        continue;
      }
      const why = accepts(filename, pipelineFormat);
      if (why) plan.rejected.push({ member: name, reason: why });
      else plan.accepted.push({ member: name, filename, size: entry.uncompressedSize, entry });
    }
    return {
      plan,
      /** A member's bytes, inflated as read; yauzl checks the declared size against what inflates. */
      read: (m: ArchiveMember) =>
        new Promise<AsyncIterable<Uint8Array>>((ok, no) => zip.openReadStream(m.entry, (e, s) => (e ? no(e) : ok(s! as AsyncIterable<Uint8Array>)))),
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Starts one run per accepted member of a stored archive (through `start`,
 * the same door as any file) and answers what the archive run records:
 * each member with its run, and the members left out with the reason.
 */
export async function splitArchive(
  body: ReadableStream<Uint8Array>,
  limits: ArchiveLimits,
  pipelineFormat: string | undefined,
  start: (m: ArchiveMember, bytes: AsyncIterable<Uint8Array>) => Promise<string>,
): Promise<{ members: { member: string; runId: string }[]; rejected: ArchivePlan["rejected"] }> {
  const { plan, read, close } = await openArchive(body, limits, pipelineFormat);
  try {
    if (plan.accepted.length === 0) {
      const why = plan.rejected.slice(0, 5).map((r) => `${r.member}: ${r.reason}`).join("; ");
      throw new AppError("invalid_input", `file: the archive holds no member the pipeline reads${why ? ` (${why})` : " (it is empty)"}`);
    }
    const members: { member: string; runId: string }[] = [];
    for (const m of plan.accepted) members.push({ member: m.member, runId: await start(m, await read(m)) });
    return { members, rejected: plan.rejected };
  } finally {
    await close();
  }
}

function entries(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((ok, no) => {
    const all: yauzl.Entry[] = [];
    zip.on("entry", (e: yauzl.Entry) => {
      all.push(e);
      zip.readEntry();
    });
    zip.on("end", () => ok(all));
    zip.on("error", no);
    zip.readEntry();
  });
}
