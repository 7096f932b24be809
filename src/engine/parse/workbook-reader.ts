import { createReadStream, createWriteStream } from "node:fs";
import { createRequire } from "node:module";
import { PassThrough, type Readable, Transform, type TransformCallback } from "node:stream";
import ExcelJS from "exceljs";
import { EngineInputError, type ParseLimits, RATIO_FLOOR_BYTES } from "../types";
import { InflateBudget } from "./bytes";
import { mib } from "./records";

// exceljs's own helpers and dependencies, so the entries are read exactly as its reader reads them.
const require = createRequire(import.meta.url);
const unzip = require("unzipper") as { Parse(opts: { forceStream: boolean }): NodeJS.ReadWriteStream };
const tmp = require("tmp") as { file(cb: (err: Error | null, path: string, fd: number, cleanup: () => void) => void): void };
const iterateStream = require("exceljs/lib/utils/iterate-stream") as (s: NodeJS.ReadableStream) => AsyncIterable<Buffer>;

export type WorkbookLimits = Pick<
  ParseLimits,
  "maxRecordBytes" | "maxSharedStrings" | "maxSharedStringsBytes" | "maxDecompressedBytes" | "maxDecompressionRatio"
>;

/** A zip entry as unzipper hands it out. */
type ZipEntry = Readable & { path: string; vars?: { compressedSize?: number; uncompressedSize?: number }; autodrain(): void };

const LT = 0x3c;

/**
 * A workbook entry, inflated through the workbook's InflateBudget and
 * checked before exceljs parses it: no run of bytes between two `<` (a cell's
 * text, a shared string's text, an attribute) may pass maxRecordBytes, and
 * the shared strings part may not pass maxSharedStringsBytes. exceljs
 * concatenates a text node before it looks at it, so this is the only place
 * a 512 MiB string can be stopped before it is in memory.
 */
class EntryGuard extends Transform {
  private span = 0;
  private bytes = 0;
  private readonly xml: boolean;

  constructor(
    private readonly path: string,
    private readonly budget: InflateBudget,
    private readonly limits: WorkbookLimits,
  ) {
    super();
    this.xml = /\.(xml|rels)$/i.test(path);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    try {
      this.check(chunk);
      cb(null, chunk);
    } catch (e) {
      cb(e as Error);
    }
  }

  private check(chunk: Buffer): void {
    this.budget.inflate(chunk.byteLength);
    this.bytes += chunk.byteLength;
    if (this.path === "xl/sharedStrings.xml" && this.bytes > this.limits.maxSharedStringsBytes) {
      throw new EngineInputError(
        `The XLSX workbook's shared strings take more than ${mib(this.limits.maxSharedStringsBytes)} (limits.maxSharedStringsBytes): they would all be held in memory. Save the sheet as CSV.`,
      );
    }
    // Pictures and other binary parts are only counted: a long run without `<` means nothing there.
    if (!this.xml) return;
    const max = this.limits.maxRecordBytes;
    const first = chunk.indexOf(LT);
    if (first < 0) {
      this.span += chunk.byteLength;
    } else {
      let widest = this.span + first;
      let prev = first;
      if (chunk.byteLength > max) {
        for (let i = chunk.indexOf(LT, first + 1); i >= 0; i = chunk.indexOf(LT, i + 1)) {
          if (i - prev > widest) widest = i - prev;
          prev = i;
        }
      } else prev = chunk.lastIndexOf(LT);
      if (widest > max) this.tooLong();
      this.span = chunk.byteLength - prev;
    }
    if (this.span > max) this.tooLong();
  }

  private tooLong(): never {
    throw new EngineInputError(
      `The XLSX workbook holds a value (a cell or shared string, in ${this.path}) longer than ${mib(this.limits.maxRecordBytes)} (limits.maxRecordBytes); ` +
        "no retry can read it. Shorten the cell, or send the data as CSV.",
    );
  }
}

/** Text length of a shared string as exceljs keeps it: plain text, or rich text runs. */
function textLength(s: unknown): number {
  if (typeof s === "string") return s.length;
  const runs = (s as { richText?: { text?: unknown }[] } | null)?.richText;
  if (!Array.isArray(runs)) return 0;
  let n = 0;
  for (const r of runs) n += typeof r.text === "string" ? r.text.length : 0;
  return n;
}

/**
 * exceljs's streaming WorkbookReader with bounded inputs: its `parse` is
 * exceljs's own (exceljs 4.4, lib/stream/xlsx/workbook-reader.js), but every
 * zip entry passes an EntryGuard before anything reads it (also before a
 * worksheet is spooled to a temporary file), declared sizes are checked before
 * an entry is inflated, and the shared-strings cache refuses more than
 * maxSharedStrings strings and any string longer than maxRecordBytes.
 */
export class BoundedWorkbookReader extends ExcelJS.stream.xlsx.WorkbookReader {
  private strings: unknown[] | undefined;

  constructor(
    private readonly source: Readable,
    options: Partial<ExcelJS.stream.xlsx.WorkbookStreamReaderOptions>,
    private readonly limits: WorkbookLimits,
    private readonly budget: InflateBudget,
  ) {
    super(source, options);
  }

  // exceljs assigns `this.sharedStrings = []` when it meets the part and pushes one string at a time.
  get sharedStrings(): unknown[] | undefined {
    return this.strings;
  }

  set sharedStrings(value: unknown[] | undefined) {
    if (!value) {
      this.strings = value;
      return;
    }
    const { maxSharedStrings, maxRecordBytes } = this.limits;
    const strings = value;
    strings.push = (...items: unknown[]): number => {
      for (const item of items) {
        if (strings.length >= maxSharedStrings) {
          throw new EngineInputError(
            `The XLSX workbook has more than ${maxSharedStrings} shared strings (limits.maxSharedStrings): they would all be held in memory. Save the sheet as CSV.`,
          );
        }
        if (textLength(item) > maxRecordBytes) {
          throw new EngineInputError(
            `Shared string ${strings.length + 1} of the XLSX workbook is longer than ${mib(maxRecordBytes)} (limits.maxRecordBytes); no retry can read it. Shorten the cell, or send the data as CSV.`,
          );
        }
        Array.prototype.push.call(strings, item);
      }
      return strings.length;
    };
    this.strings = strings;
  }

  private guard(entry: ZipEntry): ZipEntry {
    const declared = entry.vars?.uncompressedSize ?? 0;
    const packed = entry.vars?.compressedSize ?? 0;
    // A declared size is a claim (0 when the entry streams with a data descriptor), checked before a byte is inflated; the guard counts what really comes.
    if (declared > this.limits.maxDecompressedBytes || (declared > RATIO_FLOOR_BYTES && packed > 0 && declared > this.limits.maxDecompressionRatio * packed)) {
      const probe = new InflateBudget(this.limits, `The XLSX workbook's part ${entry.path}`);
      probe.read(packed);
      probe.inflate(declared);
    }
    const guarded = entry.pipe(new EntryGuard(entry.path, this.budget, this.limits)) as unknown as ZipEntry;
    guarded.path = entry.path;
    guarded.vars = entry.vars;
    guarded.autodrain = () => {
      guarded.resume();
    };
    return guarded;
  }

  /** exceljs's own generator (events of type `worksheet` and others), with guarded entries. */
  override async *parse(): AsyncGenerator<any> {
    // exceljs's internals (_parseWorksheet, ...) are not in its published types.
    const self = this as any;
    const zip = unzip.Parse({ forceStream: true });
    this.source.pipe(zip);
    // Entries are read through an object-mode PassThrough: iterating unzipper's Parse stream itself
    // while awaiting between entries (a sheet spooled to a file) can lose the entries that follow
    // (node-unzipper issues 191 and 234; seen here as a second sheet missing under load).
    const entries = zip.pipe(new PassThrough({ objectMode: true }));
    zip.on("error", (e: Error) => entries.destroy(e));
    const waitingWorkSheets: { sheetNo: string; path: string; cleanup: () => void }[] = [];
    try {
      yield* this.entries(entries, waitingWorkSheets);
      while (waitingWorkSheets.length > 0) {
        const { sheetNo, path, cleanup } = waitingWorkSheets[0]!;
        yield* self._parseWorksheet(createReadStream(path), sheetNo);
        waitingWorkSheets.shift();
        cleanup();
      }
    } finally {
      // A workbook given up half-way (a limit, a truncated zip) leaves no spooled sheet behind.
      for (const w of waitingWorkSheets) w.cleanup();
    }
  }

  /** exceljs's own loop over the zip's entries, each behind an EntryGuard. */
  private async *entries(zip: NodeJS.ReadableStream, waitingWorkSheets: { sheetNo: string; path: string; cleanup: () => void }[]): AsyncGenerator<any> {
    const self = this as any;
    for await (const raw of zip as AsyncIterable<unknown>) {
      const entry = this.guard(raw as ZipEntry);
      let match: RegExpMatchArray | null;
      switch (entry.path) {
        case "_rels/.rels":
          break;
        case "xl/_rels/workbook.xml.rels":
          await self._parseRels(entry);
          break;
        case "xl/workbook.xml":
          await self._parseWorkbook(entry);
          break;
        case "xl/sharedStrings.xml":
          yield* self._parseSharedStrings(entry);
          break;
        case "xl/styles.xml":
          await self._parseStyles(entry);
          break;
        default:
          if ((match = entry.path.match(/^xl\/worksheets\/sheet(\d+)[.]xml$/))) {
            const sheetNo = match[1]!;
            if (this.sharedStrings && self.workbookRels) {
              yield* self._parseWorksheet(iterateStream(entry), sheetNo);
            } else {
              // Sheets before the shared strings are spooled to temporary files (exceljs's way), guarded as they are written.
              await new Promise<void>((resolve, reject) => {
                tmp.file((err, path, _fd, cleanup) => {
                  if (err) return reject(err);
                  waitingWorkSheets.push({ sheetNo, path, cleanup });
                  const out = createWriteStream(path);
                  out.on("error", reject);
                  entry.on("error", (e) => {
                    out.destroy();
                    reject(e);
                  });
                  entry.pipe(out);
                  out.on("finish", () => resolve());
                });
              });
            }
          } else if ((match = entry.path.match(/^xl\/worksheets\/_rels\/sheet(\d+)[.]xml.rels$/))) {
            yield* self._parseHyperlinks(iterateStream(entry), match[1]);
          }
          break;
      }
      entry.autodrain();
    }
  }
}
