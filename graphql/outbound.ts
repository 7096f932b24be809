import * as outbound from "../src/services/outbound";
import { builder } from "./builder";
import { inputType, outputType } from "./from-zod";

/**
 * Outbound uploads, the same operations as REST: start, send a part, read,
 * complete. A part's rows are a JSON value (the service checks it is an
 * array of objects); a GraphQL request is bounded by MAX_JSON_BODY_BYTES,
 * so large parts go over REST (OUTBOUND_MAX_PART_BYTES). Types are looked
 * up inside the field callbacks: they are generated once every module's
 * shapes are registered.
 */

builder.queryFields((t) => ({
  outboundUpload: t.field({
    nullable: true,
    type: outputType(outbound.OutboundUpload),
    description: "An outbound upload session: status, parts received, connectionName, and runId once completed.",
    args: { uploadId: t.arg.id({ required: true }) },
    resolve: (_, { uploadId }, { svc, actor }) => outbound.getOutboundUpload(svc, { actor, uploadId: String(uploadId) }),
  }),
}));

builder.mutationFields((t) => ({
  createOutboundUpload: t.field({
    nullable: true,
    type: outputType(outbound.OutboundUploadCreated),
    description: "Starts an outbound upload for a pipeline with direction outbound, named with its connection's name.",
    args: { input: t.arg({ type: inputType(outbound.CreateOutboundUploadInput), required: true }) },
    resolve: (_, { input }, { svc, actor }) => outbound.createOutboundUpload(svc, { actor, input }),
  }),
  putOutboundUploadPart: t.field({
    nullable: true,
    type: outputType(outbound.OutboundPartReceived),
    description: "Stores one part (a JSON array of row objects); sending a part again replaces it.",
    args: {
      uploadId: t.arg.id({ required: true }),
      partNumber: t.arg.int({ required: true, description: "1 to the upload's totalParts." }),
      rows: t.arg({ type: "JSON", required: true, description: "A JSON array of row objects." }),
    },
    resolve: (_, { uploadId, partNumber, rows }, { svc, actor }) =>
      outbound.putOutboundPart(svc, { actor, uploadId: String(uploadId), partNumber, rows }),
  }),
  completeOutboundUpload: t.field({
    nullable: true,
    type: outputType(outbound.OutboundUploadCompleted),
    description: "Combines the parts in part order into one file and starts the run; completing again answers the same run.",
    args: { uploadId: t.arg.id({ required: true }), input: t.arg({ type: inputType(outbound.CompleteOutboundUploadInput), required: true }) },
    resolve: (_, { uploadId, input }, { svc, actor }) => outbound.completeOutboundUpload(svc, { actor, uploadId: String(uploadId), input }),
  }),
}));
