import type iconvLite from "iconv-lite";
import { EngineInputError } from "../types";

/** iconv-lite, loaded by `loadDecoder` only for a file that is not UTF-8 (it adds ~3 MB to each worker thread). */
let iconv: typeof iconvLite | null = null;

export type TextEncoding = "utf-8" | "utf-16le" | "utf-16be" | "latin1" | "windows-1252";

/**
 * Text handed to the parsers in pieces of at least this many characters.
 * papaparse's chunk parser was as fast fed 128 KiB as 1 MiB pieces here;
 * at 256 KiB each of the local store's 256 KiB reads is handed on as
 * decoded, without joining two into a new string.
 */
export const TEXT_CHUNK = 256 * 1024;

export interface EncodingChoice {
  encoding: TextEncoding;
  /** Bytes of byte-order mark to drop. */
  bom: number;
}

/** A byte-order mark is certain and wins; then the option; then UTF-16 without a BOM by its zero bytes; else UTF-8. */
export function chooseEncoding(head: Uint8Array, option: TextEncoding | undefined): EncodingChoice {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: "utf-8", bom: 3 };
  if (head[0] === 0xff && head[1] === 0xfe) return { encoding: "utf-16le", bom: 2 };
  if (head[0] === 0xfe && head[1] === 0xff) return { encoding: "utf-16be", bom: 2 };
  if (option) return { encoding: option, bom: 0 };
  const sample = Math.min(head.length, 4096) & ~1;
  if (sample >= 8) {
    let evenZero = 0;
    let oddZero = 0;
    for (let i = 0; i < sample; i += 2) {
      if (head[i] === 0) evenZero++;
      if (head[i + 1] === 0) oddZero++;
    }
    const pairs = sample / 2;
    if (oddZero > pairs * 0.9 && evenZero === 0) return { encoding: "utf-16le", bom: 0 };
    if (evenZero > pairs * 0.9 && oddZero === 0) return { encoding: "utf-16be", bom: 0 };
  }
  return { encoding: "utf-8", bom: 0 };
}

/** Makes the decoder for `choice` available to decodeSample and decodeText. */
export async function loadDecoder(choice: EncodingChoice): Promise<void> {
  if (choice.encoding !== "utf-8" && !iconv) iconv = (await import("iconv-lite")).default;
}

function iconvFor(): typeof iconvLite {
  if (!iconv) throw new Error("loadDecoder was not awaited for this encoding");
  return iconv;
}

/** Decodes a sample for sniffing only: lenient, whole. */
export function decodeSample(head: Uint8Array, choice: EncodingChoice): string {
  const bytes = head.subarray(choice.bom);
  if (choice.encoding === "utf-8") return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  return iconvFor().decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), choice.encoding);
}

/**
 * Bytes to text, streaming (a character split across chunks is kept whole).
 * UTF-8 is decoded strictly: a stray Windows-1252 byte stops the run with a
 * message naming the option that reads it, instead of silently writing U+FFFD.
 */
export async function* decodeText(chunks: AsyncIterable<Uint8Array>, choice: EncodingChoice): AsyncGenerator<string> {
  let skip = choice.bom;
  let offset = 0;
  const pending: string[] = [];
  let pendingChars = 0;
  const decode = textDecoder(choice.encoding);
  for await (let chunk of chunks) {
    if (skip > 0) {
      const drop = Math.min(skip, chunk.byteLength);
      chunk = chunk.subarray(drop);
      skip -= drop;
      offset += drop;
    }
    const text = decode.write(chunk, offset);
    offset += chunk.byteLength;
    if (text.length === 0) continue;
    if (pendingChars === 0 && text.length >= TEXT_CHUNK) {
      yield text;
      continue;
    }
    pending.push(text);
    pendingChars += text.length;
    if (pendingChars >= TEXT_CHUNK) {
      yield pending.join("");
      pending.length = 0;
      pendingChars = 0;
    }
  }
  const tail = decode.end(offset);
  if (tail) pending.push(tail);
  if (pending.length > 0) yield pending.join("");
}

interface StreamDecoder {
  write(bytes: Uint8Array, offset: number): string;
  end(offset: number): string;
}

function textDecoder(encoding: TextEncoding): StreamDecoder {
  if (encoding === "utf-8") {
    const d = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    return {
      write(bytes, offset) {
        try {
          return d.decode(bytes, { stream: true });
        } catch {
          throw notUtf8(offset + firstInvalidUtf8(bytes));
        }
      },
      end(offset) {
        try {
          return d.decode();
        } catch {
          throw notUtf8(offset);
        }
      },
    };
  }
  const d = iconvFor().getDecoder(encoding);
  return {
    write: (bytes) => d.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
    end: () => d.end() ?? "",
  };
}

function notUtf8(at: number): EngineInputError {
  return new EngineInputError(
    `The file is not valid UTF-8 (the first invalid byte is at offset ${at}). ` +
      'If it was saved by Excel or another Windows program, set mappings.options.encoding to "windows-1252" ' +
      '(or "latin1", or "utf-16le" for Unicode text saved by Windows).',
  );
}

/** Where a chunk stops being UTF-8 (only on the error path; a sequence cut at the chunk's end counts as valid). */
function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    const n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) {
      if (i + k >= b.length) return b.length;
      if ((b[i + k]! & 0xc0) !== 0x80) return i;
    }
    i += n + 1;
  }
  return b.length;
}
