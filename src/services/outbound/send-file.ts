import { z } from "zod";
import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import { openInput } from "../../engine/parse";
import { EngineInputError, type SourceRecord } from "../../engine/types";
import type { CallOptions, ServiceContext } from "../context";
import { extensionOf } from "../run-path/process/delivery/names";
import { sampleFromInput, SampleInput } from "../shared/sample";
import { Name } from "../shared/shapes";
import { completeOutboundUpload } from "./complete-upload";
import { createOutboundUpload } from "./create-upload";
import { putOutboundPart } from "./put-part";
import { OUTPUT_FORMATS } from "../pipelines/shapes";
import type { OutboundUploadCompleted } from "./shapes";

export const SendOutboundFileInput = z.strictObject({
  connectionName: Name,
  pipelineName: Name,
  file: SampleInput,
  outputFilename: z.string().max(200).optional(),
  outputFormat: z.enum(OUTPUT_FORMATS, { error: `must be one of ${OUTPUT_FORMATS.join(", ")}` }).optional(),
});
export type SendOutboundFileInput = z.input<typeof SendOutboundFileInput>;

/** A file's name with its extension replaced by `.json`: the name of the combined rows the run reads. */
const asJsonName = (name: string) => {
  const ext = extensionOf(name);
  return `${ext ? name.slice(0, name.length - ext.length - 1) : name}.json`;
};

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * Sends a whole JSON or CSV file (as text or base64, inside the request)
 * through an outbound pipeline: its rows are read by the engine's parsers,
 * as a run reads an inbound file, then go through the outbound upload
 * session's own steps (create, one part, complete), each audited as the
 * API records them. Large files go in parts over the upload API.
 */
export async function sendOutboundFile(ctx: ServiceContext, opts: CallOptions & { input: unknown }): Promise<OutboundUploadCompleted> {
  const input = parseInput(SendOutboundFileInput, opts.input);
  const file = await sampleFromInput(input.file, ctx.settings.maxUploadBytes, "file");
  if (file.truncated) throw new AppError("payload_too_large", `file: larger than the ${ctx.settings.maxUploadBytes}-byte limit of one file (MAX_UPLOAD_BYTES)`);
  const rows: SourceRecord[] = [];
  try {
    const parsed = await openInput(once(file.bytes), { filename: file.filename });
    if (parsed.summary.format !== "csv" && parsed.summary.format !== "json" && parsed.summary.format !== "tsv" && parsed.summary.format !== "ndjson") {
      throw new AppError("invalid_input", `file: is ${parsed.summary.format}; send a JSON or CSV file`);
    }
    for await (const batch of parsed.batches) rows.push(...batch);
  } catch (e) {
    if (e instanceof EngineInputError) throw new AppError("invalid_input", `file: ${e.message}`);
    throw e;
  }
  if (rows.length === 0) throw new AppError("invalid_input", "file: has no rows to send");
  const created = await createOutboundUpload(ctx, {
    actor: opts.actor,
    input: {
      connectionName: input.connectionName,
      pipelineName: input.pipelineName,
      totalParts: 1,
      filename: asJsonName(file.filename),
      ...(input.outputFilename ? { outputFilename: input.outputFilename } : {}),
      ...(input.outputFormat ? { outputFormat: input.outputFormat } : {}),
    },
  });
  const part = await putOutboundPart(ctx, { actor: opts.actor, uploadId: created.uploadId, partNumber: 1, rows });
  return completeOutboundUpload(ctx, { actor: opts.actor, uploadId: created.uploadId, input: { parts: [{ partNumber: 1, etag: part.etag }] } });
}
