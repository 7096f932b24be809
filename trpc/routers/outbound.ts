import { AppError } from "../../src/domain/errors";
import * as outbound from "../../src/services/outbound";
import { pagination } from "../../src/services/shared/shapes";
import { input, procedure, router } from "../init";

/** What a typed client may send; each use case checks the values, with REST's messages. */
type ByUpload = { uploadId: string };

/**
 * Outbound uploads, the same operations as REST. A part's rows travel in
 * the request body, bounded by MAX_JSON_BODY_BYTES; large parts go over REST.
 */
export const outboundRouter = router({
  /** The workspace's upload sessions, newest first (filters: pipelineId, connectionId, status). */
  list: procedure.input(input<outbound.ListOutboundUploadsQuery | undefined>()).query(async ({ ctx, input: query }) => {
    const page = await outbound.listOutboundUploads(ctx.svc, { actor: ctx.actor, query: query ?? {} });
    return { data: page.items, pagination: pagination(page) };
  }),
  /** A whole JSON or CSV file (text or base64) sent through an outbound pipeline: one session, one part, completed. */
  sendFile: procedure
    .input(input<outbound.SendOutboundFileInput>())
    .mutation(({ ctx, input: data }) => outbound.sendOutboundFile(ctx.svc, { actor: ctx.actor, input: data })),
  create: procedure
    .input(input<outbound.CreateOutboundUploadInput>())
    .mutation(({ ctx, input: data }) => outbound.createOutboundUpload(ctx.svc, { actor: ctx.actor, input: data })),
  get: procedure
    .input(input<ByUpload>())
    .query(({ ctx, input: data }) => outbound.getOutboundUpload(ctx.svc, { actor: ctx.actor, uploadId: uploadIdOf(data) })),
  putPart: procedure
    .input(input<ByUpload & { partNumber: number; rows: Record<string, unknown>[] }>())
    .mutation(({ ctx, input: data }) =>
      outbound.putOutboundPart(ctx.svc, { actor: ctx.actor, uploadId: uploadIdOf(data), partNumber: data?.partNumber, rows: data?.rows }),
    ),
  complete: procedure
    .input(input<ByUpload & outbound.CompleteOutboundUploadInput>())
    .mutation(({ ctx, input: data }) => {
      const { uploadId: _uploadId, ...rest } = (data ?? {}) as ByUpload & outbound.CompleteOutboundUploadInput;
      return outbound.completeOutboundUpload(ctx.svc, { actor: ctx.actor, uploadId: uploadIdOf(data), input: rest });
    }),
});

/** A missing or empty uploadId is a 400 naming it (a 404 would say an upload was looked for). */
function uploadIdOf(data: unknown): string {
  const id = (data as { uploadId?: unknown } | undefined)?.uploadId;
  if (typeof id !== "string" || id === "") throw new AppError("invalid_input", "uploadId: is required");
  return id;
}
