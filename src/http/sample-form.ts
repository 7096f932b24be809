import { AppError, isAppError } from "../domain/errors";
import { readSample, type Sample } from "../services/shared/sample";
import { checkJsonText } from "../transport/body";
import { readFileForm } from "./multipart";

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
  const { value: sample, fields } = await readFileForm<Sample>(
    request,
    {
      noun: "sample",
      maxFileBytes: maxBodyBytes,
      slack: 2 * 1024 * 1024,
      limits: { fields: 20, fieldSize: 1024 * 1024, parts: 40 },
      limitFile: true,
      keepFields: true,
      doneEarly: (s) => s.truncated,
    },
    (file) => readSample(file.filename ?? "sample", file.body, sampleBytes),
  );
  if (sample.bytes.byteLength === 0) throw new AppError("invalid_input", "file: is empty (0 bytes)");
  return { sample, fields };
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
