import { AppError } from "../../../domain/errors";
import type { RunSource } from "../../../domain/runs";
import type { ServiceContext } from "../../context";
import { loadPipelineRow, type PipelineRow } from "../../pipelines/record";

/**
 * The pipeline a file is sent to, if it takes files from that source: the
 * workspace's own (404 otherwise), active (409), and of the matching
 * direction (outbound data enters only through outbound uploads; 400).
 * Transports call it before reading a body, so a refused upload is not read.
 */
export async function pipelineForFiles(
  ctx: ServiceContext,
  opts: { workspaceId: string; pipelineId: string; source: RunSource },
): Promise<PipelineRow> {
  const pipeline = await loadPipelineRow(ctx, { workspaceId: opts.workspaceId, id: opts.pipelineId });
  if (!pipeline.isActive) throw new AppError("conflict", `pipeline '${pipeline.id}' is inactive; activate it (isActive: true) before sending it files`);
  const wantsOutbound = opts.source === "outbound";
  if (wantsOutbound !== (pipeline.direction === "outbound")) {
    throw new AppError(
      "invalid_input",
      wantsOutbound
        ? `pipeline '${pipeline.name}' is inbound; outbound data needs a pipeline with direction outbound`
        : `pipeline '${pipeline.id}' is outbound; its data enters through outbound uploads (POST /outbound/uploads)`,
    );
  }
  return pipeline;
}
