import { and, eq, sql } from "drizzle-orm";
import { AppError } from "../../domain/errors";
import { newId } from "../../domain/ids";
import { parseInput } from "../../domain/validation";
import type { OutputFormat } from "../../engine/types";
import type { CallOptions, ServiceContext } from "../context";
import { checkFileName, defaultDeliveredName, formatOfName, withFormatExtension } from "../run-path/process/delivery/names";
import type { UploadRow } from "./record";
import { CreateOutboundUploadInput, type OutboundUploadCreated } from "./shapes";
import { fieldsOf, recordAudit } from "../audit";

const invalid = (message: string) => new AppError("invalid_input", message);

/**
 * `POST /outbound/uploads`: opens a session for an outbound pipeline named
 * by its connection's and its own human-readable names. Names match
 * whatever their case (both are unique per workspace, any case). A name
 * that matches nothing in the caller's workspace is a 404 that does not
 * repeat the name (it may be another workspace's).
 */
export async function createOutboundUpload(ctx: ServiceContext, opts: CallOptions & { input: CreateOutboundUploadInput }): Promise<OutboundUploadCreated> {
  const input = parseInput(CreateOutboundUploadInput, opts.input);
  const workspaceId = opts.actor.workspaceId;
  if (input.connectionName !== undefined && input.clientName !== undefined && input.connectionName.toLowerCase() !== input.clientName.toLowerCase()) {
    throw invalid("clientName: differs from connectionName; send connectionName alone (clientName is its deprecated alias)");
  }
  const connectionName = input.connectionName ?? input.clientName;
  if (connectionName === undefined) throw invalid("connectionName: is required (the connection's name; clientName is its deprecated alias)");
  const filenameField = input.filename === undefined ? undefined : checkFileName(input.filename, "filename");
  const outputFilenameField = input.outputFilename === undefined ? undefined : checkFileName(input.outputFilename, "outputFilename");

  const { connections: c, pipelines: p } = ctx.db.t;
  const [conn] = await ctx.db.read
    .select({ id: c.id, name: c.name })
    .from(c)
    .where(and(eq(c.workspaceId, workspaceId), sql`lower(${c.name}) = ${connectionName.toLowerCase()}`));
  if (!conn) throw new AppError("not_found", `${input.connectionName !== undefined ? "connectionName" : "clientName"}: no connection of this workspace has that name`);
  const [pipeline] = await ctx.db.read
    .select()
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), sql`lower(${p.name}) = ${input.pipelineName.toLowerCase()}`));
  if (!pipeline) throw new AppError("not_found", "pipelineName: no pipeline of this workspace has that name");
  if (pipeline.connectionId !== conn.id) {
    throw invalid(`pipelineName: pipeline '${pipeline.name}' belongs to another connection, not to '${conn.name}'`);
  }
  if (pipeline.direction !== "outbound") {
    throw invalid(`pipelineName: pipeline '${pipeline.name}' is ${pipeline.direction}; outbound uploads need a pipeline with direction outbound`);
  }
  if (!pipeline.isActive) {
    throw new AppError("conflict", `pipelineName: pipeline '${pipeline.name}' is inactive; activate it (isActive: true) before uploading to it`);
  }

  const outputFormat: OutputFormat =
    input.outputFormat ??
    input.format ??
    (outputFilenameField === undefined ? undefined : formatOfName(outputFilenameField)) ??
    pipeline.mappings.options.outputFormat ??
    "json";
  const id = newId("upload");
  const filename = filenameField ?? `upload-${id}.json`;
  const outputFilename = outputFilenameField === undefined ? defaultDeliveredName(filename, outputFormat) : withFormatExtension(outputFilenameField, outputFormat);
  const now = ctx.clock.now();
  const row: UploadRow = {
    id,
    workspaceId,
    connectionId: conn.id,
    connectionName: conn.name,
    pipelineId: pipeline.id,
    pipelineName: pipeline.name,
    status: "initiated",
    totalParts: input.totalParts,
    filename,
    outputFilename,
    outputFormat,
    runId: null,
    errorMessage: null,
    expiresAt: new Date(now.getTime() + ctx.settings.outboundUploadTtlSeconds * 1000),
    endedAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await ctx.db.tx(async (w) => {
    await w.insert(ctx.db.t.outboundUploads).values(row);
    await recordAudit(ctx, w, opts.actor, { workspaceId: row.workspaceId, action: "outboundUpload.create", resourceType: "outboundUpload", resourceId: id, fields: fieldsOf(opts.input) });
  });
  return { uploadId: id, status: "initiated", totalParts: row.totalParts, filename, outputFilename, outputFormat, expiresAt: row.expiresAt };
}
