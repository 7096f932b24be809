import { z } from "zod";
import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";

/** A sample file as a service reads it: whole, in memory, at most PREVIEW_MAX_BYTES. */
export interface Sample {
  filename: string;
  bytes: Uint8Array;
  /** The file went on past the limit and was cut there. */
  truncated: boolean;
}

/**
 * Reads a sample up to `maxBytes`: a longer file is cut at the limit and
 * reading stops there (the caller closes the source), so the caller answers
 * from what it holds and says `truncated`.
 */
export async function readSample(filename: string, body: AsyncIterable<Uint8Array> | Uint8Array, maxBytes: number): Promise<Sample> {
  if (body instanceof Uint8Array) {
    return body.byteLength > maxBytes ? { filename, bytes: body.subarray(0, maxBytes), truncated: true } : { filename, bytes: body, truncated: false };
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    const room = maxBytes - size;
    if (chunk.byteLength > room) {
      if (room > 0) chunks.push(chunk.subarray(0, room));
      size = maxBytes;
      truncated = true;
      break;
    }
    chunks.push(chunk);
    size += chunk.byteLength;
  }
  return { filename, bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), truncated };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * GraphQL and tRPC take the sample inside their JSON body: as `text`
 * (UTF-8) or as `base64` (any bytes: gzip, a workbook), one of the two.
 * The body's own limit (MAX_JSON_BODY_BYTES) applies first; larger samples
 * go through the REST form.
 */
export const SampleInput = z
  .strictObject({
    filename: z.string().min(1, "must not be empty").max(255, "must be at most 255 characters").meta({ description: "The file's name; its extension helps detect the format (.csv, .json, .xlsx, .gz)." }),
    text: z.string().optional().meta({ description: "The sample as text (sent as UTF-8)." }),
    base64: z.string().optional().meta({ description: "The sample's bytes in base64; for binary files." }),
  })
  .superRefine((s, ctx) => {
    if ((s.text === undefined) === (s.base64 === undefined)) ctx.addIssue({ code: "custom", path: ["text"], message: "give exactly one of text or base64" });
    if (s.base64 !== undefined && !BASE64.test(s.base64.replace(/\s+/g, ""))) ctx.addIssue({ code: "custom", path: ["base64"], message: "is not valid base64" });
  })
  .meta({ id: "SampleInput" });
export type SampleInput = z.input<typeof SampleInput>;

/** The sample given inside a JSON body (GraphQL, tRPC), checked and cut like an uploaded one. */
export function sampleFromInput(raw: unknown, maxBytes: number, root = "sample"): Promise<Sample> {
  const s = parseInput(SampleInput, raw, root);
  const bytes = s.text !== undefined ? new TextEncoder().encode(s.text) : new Uint8Array(Buffer.from(s.base64!.replace(/\s+/g, ""), "base64"));
  if (bytes.byteLength === 0) throw new AppError("invalid_input", `${root}: is empty; send the sample's content`);
  return readSample(s.filename, bytes, maxBytes);
}

/** A JSON-body request (GraphQL, tRPC) that carries its sample in `sample`: the sample, checked and cut, and the rest of the input. */
export async function sampleAndRest(raw: unknown, maxBytes: number): Promise<{ sample: Sample; rest: Record<string, unknown> }> {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new AppError("invalid_input", "input: must be an object with sample");
  const { sample, ...rest } = raw as Record<string, unknown>;
  return { sample: await sampleFromInput(sample, maxBytes), rest };
}
