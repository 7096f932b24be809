import { Readable } from "node:stream";
import type { ReadableStream as NodeWebStream } from "node:stream/web";
import busboy from "busboy";
import { AppError } from "../domain/errors";

/** Chunk size while a form's file streams through (FIELD-NOTES: 512 KiB reads stream fastest here). */
const CHUNK = 512 * 1024;

/** The form's `file` part, handed to the consumer while it streams in. */
export interface FilePart {
  /** As the part's header gave it; undefined when it gave none. */
  filename: string | undefined;
  mimetype: string;
  body: Readable;
  /** The request's content-length (the whole form, so a little more than the file), when it was given. */
  declaredBytes?: number;
}

export interface FormRules<T> {
  /** What the `file` field holds, as error messages name it: "file" or "sample". */
  noun: string;
  /** The largest file; a declared content-length above it plus `slack` is refused before a byte is read (413). */
  maxFileBytes: number;
  /** Multipart framing (boundaries, part headers, other fields) a form may add to its file. */
  slack: number;
  limits: { fields: number; fieldSize: number; parts: number };
  /** The file part is cut off at `maxFileBytes` with a 413 as it streams (otherwise the consumer enforces its size). */
  limitFile?: boolean;
  /** Text fields are kept (one longer than `limits.fieldSize` is a 400); otherwise they are read past. */
  keepFields?: boolean;
  /** The consumer's answer ends the reading at once: the rest of the body is not read. */
  doneEarly?: (value: T) => boolean;
  /**
   * The consumer stores the file: when the form breaks, the answer waits for
   * the consumer to settle (so a refused upload has cleaned up what it
   * stored), and a file it took whole is kept, its result answered.
   */
  consumerStores?: boolean;
}

/**
 * Reads a multipart form whose file is in the field `file`, streaming the
 * file into `consume` without holding it (busboy parses the body as it
 * arrives). Other file parts are read past; a form without a `file` part
 * is a 400. Shared by uploads (a run's file) and samples (previews, schema
 * inference), which differ only in their `rules`.
 */
export async function readFileForm<T>(
  request: Request,
  rules: FormRules<T>,
  consume: (file: FilePart, fields: Record<string, string>) => Promise<T>,
): Promise<{ value: T; fields: Record<string, string> }> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new AppError(
      "unsupported_media_type",
      `content-type: '${contentType}' is not accepted here; send multipart/form-data with the ${rules.noun} in the field 'file'`,
    );
  }
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  const tooLarge = () => new AppError("payload_too_large", `file: larger than the ${rules.maxFileBytes}-byte upload limit`);
  if (Number.isFinite(declared) && declared > rules.maxFileBytes + rules.slack) throw tooLarge();
  if (!request.body) throw missingFile(rules.noun, false);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { "content-type": contentType },
      highWaterMark: CHUNK,
      fileHwm: CHUNK,
      limits: { ...rules.limits, headerPairs: 100, ...(rules.limitFile ? { fileSize: rules.maxFileBytes } : {}) },
    });
  } catch (e) {
    throw new AppError("invalid_input", `content-type: ${(e as Error).message}`);
  }
  const source = Readable.fromWeb(request.body as unknown as NodeWebStream<Uint8Array>);

  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let started: Promise<T> | null = null;
    let fileAsField = false;
    let settled = false;
    const stop = () => {
      settled = true;
      source.unpipe(parser);
      source.destroy();
      parser.destroy();
    };
    const fail = (e: unknown) => {
      if (settled) return;
      stop();
      if (!started || !rules.consumerStores) return reject(e);
      started.then((value) => resolve({ value, fields }), () => reject(e));
    };
    parser.on("file", (name, stream, info) => {
      if (name !== "file" || started) {
        stream.resume();
        return;
      }
      if (rules.limitFile) stream.on("limit", () => fail(tooLarge()));
      // A truncated form errors the part before the consumer may be reading it; the consumer sees the error when it reads.
      stream.on("error", () => {});
      started = consume({ filename: info.filename, mimetype: info.mimeType, body: stream, declaredBytes: Number.isFinite(declared) ? declared : undefined }, fields);
      started.then((value) => {
        if (settled || !rules.doneEarly?.(value)) return;
        stop();
        resolve({ value, fields });
      }, fail);
    });
    parser.on("field", (name, value, info) => {
      if (name === "file") fileAsField = true;
      if (!rules.keepFields) return;
      if (info.valueTruncated) return fail(new AppError("invalid_input", `${name}: longer than ${rules.limits.fieldSize} bytes`));
      fields[name] = value;
    });
    parser.on("close", () => {
      if (!started) return fail(missingFile(rules.noun, fileAsField));
      started.then((value) => {
        if (settled) return;
        settled = true;
        resolve({ value, fields });
      }, fail);
    });
    parser.on("error", (e) => fail(new AppError("invalid_input", `body: malformed multipart form (${(e as Error).message})`)));
    source.on("error", (e) => fail(new AppError("invalid_input", `body: the upload ended before the form was complete (${(e as Error).message})`)));
    source.pipe(parser);
  });
}

function missingFile(noun: string, sentAsField: boolean): AppError {
  return new AppError(
    "invalid_input",
    sentAsField
      ? "file: must be a file part (with a filename), not a plain form field"
      : `file: is required; send the ${noun} as multipart/form-data in the field 'file'`,
  );
}
