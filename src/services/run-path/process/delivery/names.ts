import { AppError } from "../../../../domain/errors";
import type { OutputFormat } from "../../../../engine/types";
import { OUTPUT_FORMATS } from "../../../pipelines/shapes";

/**
 * Names of delivered files (docs/decisions/outbound.md). A name is one path
 * segment: no `/` or `\`, no control characters, no leading dot (hidden and
 * temporary names), not `..`, at most 200 characters.
 */
export const MAX_FILENAME_LENGTH = 200;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
const FORBIDDEN = /[\u0000-\u001f\u007f/\\]/;
const EXTENSION = /\.([A-Za-z0-9]{1,10})$/;

/** `name` as given when it is a valid file name, else a 400 naming `field`. */
export function checkFileName(name: string, field: string): string {
  const bad = (why: string) => new AppError("invalid_input", `${field}: ${why}`);
  if (name.length === 0) throw bad("must not be empty");
  if (name.trim() !== name) throw bad("must not start or end with spaces");
  if (FORBIDDEN.test(name)) throw bad("must be a file name: no '/', '\\' or control characters");
  if (name.startsWith(".")) throw bad("must not start with '.'");
  if (name.length > MAX_FILENAME_LENGTH) throw bad(`must be at most ${MAX_FILENAME_LENGTH} characters`);
  return name;
}

/** The extension (without the dot, as written) when the name has one: `.` then 1-10 letters or digits, after at least one character. */
export function extensionOf(name: string): string | null {
  const m = EXTENSION.exec(name);
  return m && m.index > 0 ? m[1]! : null;
}

/** The output format an extension names (`.csv`, `.json`, `.xml`, any case), if any. */
export function formatOfName(name: string): OutputFormat | undefined {
  const ext = extensionOf(name)?.toLowerCase();
  return ext && (OUTPUT_FORMATS as readonly string[]).includes(ext) ? (ext as OutputFormat) : undefined;
}

/** An outputFilename as delivered: kept exactly when it has an extension, else the format's is appended. */
export function withFormatExtension(name: string, format: OutputFormat): string {
  return extensionOf(name) ? name : `${name}.${format}`;
}

/** Without an outputFilename: the received file's name with its extension replaced by the format's (`orders.json` -> `orders.csv`). */
export function defaultDeliveredName(filename: string, format: OutputFormat): string {
  const ext = extensionOf(filename);
  const base = ext ? filename.slice(0, filename.length - ext.length - 1) : filename;
  return `${base}.${format}`;
}
