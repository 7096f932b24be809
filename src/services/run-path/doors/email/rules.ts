import { FILE_FORMATS } from "../../../connections/shapes";

/**
 * The rules an EMAIL connection applies to a message, as plain functions
 * (docs/decisions/email.md):
 * - sender: the address in the `From:` header (the envelope sender only when
 *   the header has none), matched against `emailAllowedSenders` entries:
 *   exact addresses, or `@domain` / `*@domain` for every address of exactly
 *   that domain (not its subdomains); no list (or an empty one) allows anyone;
 * - subject: `emailSubjectFilter` is a case-insensitive substring (not a
 *   regular expression: a customer's pattern never runs in the service);
 * - format: an attachment's format is its file extension (`.jsonl` counts
 *   as ndjson), or, for an attachment without a name or extension, its
 *   content type.
 */
export type FileFormat = (typeof FILE_FORMATS)[number];

export function senderAllowed(sender: string | null, allowed: readonly string[] | null | undefined): boolean {
  if (!allowed || allowed.length === 0) return true;
  if (!sender) return false;
  const address = sender.trim().toLowerCase();
  const at = address.lastIndexOf("@");
  if (at <= 0) return false;
  const domain = address.slice(at + 1);
  return allowed.some((entry) => {
    const e = entry.trim().toLowerCase();
    if (e.startsWith("@")) return domain === e.slice(1);
    if (e.startsWith("*@")) return domain === e.slice(2);
    return address === e;
  });
}

export function subjectMatches(subject: string, filter: string | null | undefined): boolean {
  if (!filter) return true;
  return subject.toLowerCase().includes(filter.toLowerCase());
}

const EXTENSIONS: Record<string, FileFormat> = {
  csv: "csv",
  tsv: "tsv",
  tab: "tsv",
  txt: "txt",
  json: "json",
  ndjson: "ndjson",
  jsonl: "ndjson",
  xml: "xml",
  // Archives and OpenPGP messages are opened by startRun and the engine (docs/decisions/formats.md); a connection opts in by listing them.
  zip: "zip",
  pgp: "pgp",
  gpg: "pgp",
  asc: "pgp",
};

const CONTENT_TYPES: Record<string, FileFormat> = {
  "text/csv": "csv",
  "application/csv": "csv",
  "text/tab-separated-values": "tsv",
  "text/plain": "txt",
  "application/json": "json",
  "application/x-ndjson": "ndjson",
  "application/ndjson": "ndjson",
  "application/jsonl": "ndjson",
  "application/xml": "xml",
  "text/xml": "xml",
  "application/zip": "zip",
  "application/pgp-encrypted": "pgp",
};

/** The file's extension, lower case, without the dot; "" when it has none. */
export function extensionOf(filename: string): string {
  const name = filename.split("/").pop() ?? "";
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
}

/**
 * What an attachment is, for the allowed-formats rule: a known format, or
 * the extension (or content type) it has, to name in the rejection.
 */
export function attachmentFormat(filename: string | null | undefined, contentType: string | null | undefined): { format: FileFormat | null; shown: string } {
  const ext = filename ? extensionOf(filename) : "";
  if (ext) return { format: EXTENSIONS[ext] ?? null, shown: ext };
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return { format: CONTENT_TYPES[type] ?? null, shown: type || "unknown" };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
const UNSAFE = /[\u0000-\u001f\u007f]/g;
const MAX_NAME = 150;

/**
 * A file name for an attachment, safe as the last segment of a space path:
 * the last component of what the sender gave, without control characters or
 * leading dots, at most 150 characters (the extension kept); `attachment-N`
 * (with the format's extension) when nothing usable is left. `taken` holds
 * the names already used in the message: a repeated name gets ` (2)`, ` (3)`.
 */
export function attachmentName(given: string | null | undefined, index: number, format: FileFormat | null, taken: Set<string>): string {
  let name = (given ?? "").split(/[/\\]/).pop()!.replace(UNSAFE, "").trim().replace(/^\.+/, "").trim();
  if (!name) name = `attachment-${index}${format ? `.${format}` : ""}`;
  if (name.length > MAX_NAME) {
    const ext = extensionOf(name);
    const tail = ext && ext.length < 20 ? `.${ext}` : "";
    name = name.slice(0, MAX_NAME - tail.length) + tail;
  }
  let unique = name;
  for (let n = 2; taken.has(unique.toLowerCase()); n++) {
    const ext = extensionOf(name);
    unique = ext ? `${name.slice(0, -(ext.length + 1))} (${n}).${ext}` : `${name} (${n})`;
  }
  taken.add(unique.toLowerCase());
  return unique;
}

export function formatsList(formats: readonly string[] | null | undefined): string {
  return formats && formats.length > 0 ? formats.join(", ") : "none";
}
