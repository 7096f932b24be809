import { Readable } from "node:stream";
import type { ReadableStream as NodeWebStream } from "node:stream/web";
import busboy from "busboy";
import { AppError, isAppError } from "../domain/errors";
import { readSample, type Sample } from "../services/shared/sample";
import { checkJsonText } from "./body";

/** Multipart framing (boundaries, part headers, the form's other fields) beside the file. */
const FORM_SLACK = 2 * 1024 * 1024;
const CHUNK = 512 * 1024;

export interface SampleForm {
  sample: Sample;
  /** The form's text fields by name (the last of a repeated one). */
  fields: Record<string, string>;
}

/**
 * Reads a sample form (multipart, the file in `file`, options as text
 * fields): the file is streamed and kept up to `sampleBytes`, the whole
 * body at most `maxBodyBytes`. A file cut at `sampleBytes` ends the reading
 * there, so the answer does not wait for the rest of a large upload: fields
 * sent after such a file are not seen, so clients send them first (the
 * answer's `applied` shows what was used).
 */
export async function readSampleForm(request: Request, sampleBytes: number, maxBodyBytes: number): Promise<SampleForm> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    throw new AppError("unsupported_media_type", `content-type: '${contentType}' is not accepted here; send multipart/form-data with the sample in the field 'file'`);
  }
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  const tooLarge = () => new AppError("payload_too_large", `file: larger than the ${maxBodyBytes}-byte upload limit`);
  if (Number.isFinite(declared) && declared > maxBodyBytes + FORM_SLACK) throw tooLarge();
  if (!request.body) throw missing(false);
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { "content-type": contentType },
      highWaterMark: CHUNK,
      fileHwm: CHUNK,
      limits: { fields: 20, fieldSize: 1024 * 1024, parts: 40, headerPairs: 100, fileSize: maxBodyBytes },
    });
  } catch (e) {
    throw new AppError("invalid_input", `content-type: ${(e as Error).message}`);
  }
  const source = Readable.fromWeb(request.body as unknown as NodeWebStream<Uint8Array>);
  return new Promise<SampleForm>((resolve, reject) => {
    const fields: Record<string, string> = {};
    let sample: Promise<Sample> | null = null;
    let fileAsField = false;
    let settled = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      source.unpipe(parser);
      source.destroy();
      parser.destroy();
      reject(e);
    };
    parser.on("file", (name, stream, info) => {
      if (name !== "file" || sample) {
        stream.resume();
        return;
      }
      stream.on("limit", () => fail(tooLarge()));
      stream.on("error", () => {});
      sample = readSample(info.filename ?? "sample", stream, sampleBytes);
      sample.then((s) => {
        if (!s.truncated || settled) return;
        // Cut at the limit: the rest of the upload is not read.
        settled = true;
        source.unpipe(parser);
        source.destroy();
        parser.destroy();
        resolve({ sample: s, fields });
      }, fail);
    });
    parser.on("field", (name, value, info) => {
      if (name === "file") fileAsField = true;
      if (info.valueTruncated) return fail(new AppError("invalid_input", `${name}: longer than 1048576 bytes`));
      fields[name] = value;
    });
    parser.on("close", () => {
      if (!sample) return fail(missing(fileAsField));
      sample.then((s) => {
        if (settled) return;
        settled = true;
        if (s.bytes.byteLength === 0) return reject(new AppError("invalid_input", "file: is empty (0 bytes)"));
        resolve({ sample: s, fields });
      }, fail);
    });
    parser.on("error", (e) => fail(new AppError("invalid_input", `body: malformed multipart form (${(e as Error).message})`)));
    source.on("error", (e) => fail(new AppError("invalid_input", `body: the upload ended before the form was complete (${(e as Error).message})`)));
    source.pipe(parser);
  });
}

/** A form field holding JSON (e.g. `mappings`), parsed; absent stays undefined. A field that is not JSON is a 400 naming it. */
export function jsonField(fields: Record<string, string>, name: string): unknown {
  const text = fields[name];
  if (text === undefined || text.trim() === "") return undefined;
  try {
    // The checks of every JSON body (depth, __proto__), with the field's name in the message.
    return checkJsonText(new TextEncoder().encode(text)).value;
  } catch (e) {
    if (isAppError(e)) throw new AppError(e.code, e.message.replace(/^body:/, `${name}:`));
    throw e;
  }
}

function missing(sentAsField: boolean): AppError {
  return new AppError(
    "invalid_input",
    sentAsField ? "file: must be a file part (with a filename), not a plain form field" : "file: is required; send the sample as multipart/form-data in the field 'file'",
  );
}
