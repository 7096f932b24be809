import { z } from "zod";
import { OUTPUT_FORMATS } from "../pipelines/shapes";
import { Name } from "../shared/shapes";

/** initiated -> completed | failed | expired (docs/decisions/outbound.md). */
export const OUTBOUND_UPLOAD_STATUSES = ["initiated", "completed", "failed", "expired"] as const;
export type OutboundUploadStatus = (typeof OUTBOUND_UPLOAD_STATUSES)[number];

/** As many parts as S3 allows in one multipart upload. */
export const MAX_TOTAL_PARTS = 10_000;

const StatusShape = z.enum(OUTBOUND_UPLOAD_STATUSES).meta({ id: "OutboundUploadStatus" });

const Format = z.enum(OUTPUT_FORMATS, { error: `must be one of ${OUTPUT_FORMATS.join(", ")}` });
const FormatShape = Format.meta({ id: "OutboundFormat" });

/**
 * A string or null. Written as a union with a null literal, not
 * `.nullable()`: that becomes `type: ["string", "null"]`, which the GraphQL
 * generator (graphql/from-zod.ts) reads as JSON; a union stays a nullable String.
 */
const StringOrNull = () => z.union([z.string(), z.literal(null)]);

/** A file name; its rules (one path segment, no leading dot...) are checked in names.ts with messages naming the member. */
const FileName = z.string().max(200, "must be at most 200 characters");

const TotalParts = z
  .number({ error: (i) => (i.input === undefined ? "is required" : "must be a whole number") })
  .int("must be a whole number")
  .min(1, "must be at least 1")
  .max(MAX_TOTAL_PARTS, `must be at most ${MAX_TOTAL_PARTS}`);

export const CreateOutboundUploadInput = z
  .strictObject({
    connectionName: Name.optional().meta({
      description: "The connection's human-readable name (any case), hosted or self-hosted SFTP. Required unless the deprecated clientName is sent.",
    }),
    clientName: Name.optional().meta({ deprecated: true, description: "Deprecated alias of connectionName." }),
    pipelineName: Name.meta({ description: "A pipeline of that connection with direction `outbound`." }),
    totalParts: TotalParts.meta({ description: `Parts that will be sent, 1 to ${MAX_TOTAL_PARTS}.` }),
    filename: FileName.optional().meta({ description: "Name of the combined JSON file (the run's filename); default `upload-{uploadId}.json`." }),
    outputFilename: FileName.optional().meta({
      description: "Exact name the processed file is delivered under; the format's extension is appended when the name has none.",
    }),
    outputFormat: FormatShape.optional().meta({
      description: "Format delivered; overrides `format`. Default: the outputFilename's extension, else the pipeline's mappings.options.outputFormat, else json.",
    }),
    format: Format.optional().meta({ deprecated: true, description: "Older name of outputFormat; outputFormat wins when both are sent." }),
  })
  .meta({ id: "CreateOutboundUploadInput" });
export type CreateOutboundUploadInput = z.input<typeof CreateOutboundUploadInput>;

/** What POST /outbound/uploads answers. */
export const OutboundUploadCreated = z
  .object({
    uploadId: z.string(),
    status: StatusShape,
    totalParts: z.number().int(),
    filename: z.string(),
    outputFilename: z.string(),
    outputFormat: FormatShape,
    expiresAt: z.date(),
  })
  .meta({ id: "OutboundUploadCreated" });
export type OutboundUploadCreated = z.output<typeof OutboundUploadCreated>;

/** The body of PUT /outbound/uploads/{uploadId}/parts/{partNumber}. */
export const OutboundPartRows = z
  .array(z.record(z.string(), z.unknown()))
  .meta({ id: "OutboundPartRows", description: "A JSON array of row objects (it may be empty). Re-sending a part replaces it." });

export const OutboundPart = z
  .object({
    partNumber: z.number().int(),
    rowCount: z.number().int(),
    size: z.number().int().meta({ description: "Bytes of the part's rows as stored." }),
    etag: z.string(),
    receivedAt: z.date(),
  })
  .meta({ id: "OutboundPart" });
export type OutboundPart = z.output<typeof OutboundPart>;

export const OutboundPartReceived = OutboundPart.extend({
  uploadId: z.string(),
  totalParts: z.number().int(),
  partsReceived: z.number().int(),
}).meta({ id: "OutboundPartReceived" });
export type OutboundPartReceived = z.output<typeof OutboundPartReceived>;

export const OutboundUpload = z
  .object({
    uploadId: z.string(),
    status: StatusShape,
    totalParts: z.number().int(),
    filename: z.string(),
    outputFilename: z.string(),
    outputFormat: FormatShape,
    connectionId: z.string(),
    connectionName: z.string().meta({ description: "The connection's current name (its name at creation once it is deleted)." }),
    pipelineId: z.string(),
    pipelineName: z.string(),
    partsReceived: z.number().int(),
    parts: z.array(OutboundPart).meta({ description: "Received parts in part order." }),
    runId: StringOrNull().meta({ description: "The run the completed upload started." }),
    errorMessage: StringOrNull().meta({ description: "Why the session failed or expired." }),
    expiresAt: z.date(),
    endedAt: z.date().nullable().meta({ description: "When the session was completed, failed or expired." }),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "OutboundUpload" });
export type OutboundUpload = z.output<typeof OutboundUpload>;

const PartRef = z
  .strictObject({
    partNumber: z.number({ error: (i) => (i.input === undefined ? "is required" : "must be a whole number") }).int("must be a whole number"),
    etag: z.string().max(200).optional().meta({ description: "When sent, must equal the etag the part's PUT answered (the part was not replaced since)." }),
  })
  .meta({ id: "OutboundPartRef" });

export const CompleteOutboundUploadInput = z
  .strictObject({
    parts: z
      .array(PartRef, { error: (i) => (i.input === undefined ? "is required" : "must be an array of {partNumber}") })
      .max(MAX_TOTAL_PARTS, `must have at most ${MAX_TOTAL_PARTS} entries`)
      .meta({ description: "Every part, once each; the count must equal totalParts." }),
  })
  .meta({ id: "CompleteOutboundUploadInput" });
export type CompleteOutboundUploadInput = z.input<typeof CompleteOutboundUploadInput>;

export const OutboundUploadCompleted = z
  .object({
    message: z.string(),
    filename: z.string(),
    uploadId: z.string(),
    status: StatusShape,
    runId: z.string(),
    outputFilename: z.string(),
    outputFormat: FormatShape,
  })
  .meta({ id: "OutboundUploadCompleted" });
export type OutboundUploadCompleted = z.output<typeof OutboundUploadCompleted>;
