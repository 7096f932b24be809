import { EngineInputError, type InputFormat } from "../types";

const BY_EXTENSION: Record<string, InputFormat> = {
  csv: "csv",
  tsv: "tsv",
  tab: "tsv",
  xlsx: "xlsx",
  xlsm: "xlsx",
  json: "json",
  ndjson: "ndjson",
  jsonl: "ndjson",
  xml: "xml",
};

/** The format a file name claims (`data.csv.gz` is CSV); undefined when the name says nothing known. */
export function formatFromName(filename: string): InputFormat | undefined {
  const name = filename.toLowerCase().replace(/\.gz$/, "");
  const dot = name.lastIndexOf(".");
  if (dot < 0) return undefined;
  const ext = name.slice(dot + 1);
  if (ext === "xls") {
    throw new EngineInputError("XLS workbooks (Excel 97-2003) are not read; save the sheet as .xlsx or CSV and send it again.");
  }
  return BY_EXTENSION[ext];
}

export function isZip(head: Uint8Array): boolean {
  return head[0] === 0x50 && head[1] === 0x4b && (head[2] === 0x03 || head[2] === 0x05) && (head[3] === 0x04 || head[3] === 0x06);
}

function isOle2(head: Uint8Array): boolean {
  return head[0] === 0xd0 && head[1] === 0xcf && head[2] === 0x11 && head[3] === 0xe0;
}

/** Formats read from the content when neither the options nor the name decide. Delimited text is the fallback. */
export function sniffFormat(head: Uint8Array, sample: string): InputFormat | "delimited" {
  if (isZip(head)) return "xlsx";
  if (isOle2(head)) {
    throw new EngineInputError("This is an XLS workbook (Excel 97-2003), which is not read; save the sheet as .xlsx or CSV and send it again.");
  }
  const start = sample.search(/\S/);
  const first = start < 0 ? "" : sample[start];
  if (first === "[") return "json";
  if (first === "<") return "xml";
  if (first === "{") return looksLikeNdjson(sample.slice(start)) ? "ndjson" : "json";
  return "delimited";
}

/** NDJSON when the first line is a whole JSON object and the next non-blank line starts another one. */
export function looksLikeNdjson(sample: string): boolean {
  const nl = sample.indexOf("\n");
  if (nl < 0) return false;
  try {
    const v: unknown = JSON.parse(sample.slice(0, nl));
    if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  } catch {
    return false;
  }
  const rest = sample.slice(nl + 1).trimStart();
  return rest === "" || rest[0] === "{";
}

/** A NUL byte does not occur in text files in the supported 8-bit encodings; it marks binary content. */
export function checkNotBinary(head: Uint8Array, what: string): void {
  const at = head.indexOf(0);
  if (at >= 0) {
    throw new EngineInputError(
      `The file does not look like ${what} text: it contains binary data (a zero byte at offset ${at}). ` +
        "Check that the right file was sent, or set mappings.options.format / encoding if it is UTF-16 text.",
    );
  }
}
