import { AppError } from "../../domain/errors";
import { parseInput } from "../../domain/validation";
import type { CallOptions, ServiceContext } from "../context";
import { streamed } from "../../runtime/gc";
import { RowSplitter } from "./processed-file";
import { findRunByProcessedName, loadRun, processedFilename, requireProcessedJson, type RunFile } from "./runs";
import { ProcessedJsonQuery } from "./shapes";

export interface ProcessedJson {
  pipelineRunId: string;
  filename: string;
  contentType: string;
  /** The file's bytes (or the page of rows asked for, in the same layout), streamed. */
  body: ReadableStream<Uint8Array>;
}

/**
 * A processed JSON file of the caller's workspace, by run id or by name
 * (the newest processed run with that name). With `offset`/`limit` only
 * those rows are returned, still as a JSON array in the engine's layout.
 */
export async function getProcessedJson(ctx: ServiceContext, opts: CallOptions & { query: Record<string, unknown> }): Promise<ProcessedJson> {
  const q = parseInput(ProcessedJsonQuery, opts.query);
  const workspaceId = opts.actor.workspaceId;
  let run: RunFile;
  if (q.pipelineRunId !== undefined) {
    run = await loadRun(ctx, { workspaceId, id: q.pipelineRunId, field: "pipelineRunId" });
    if (q.filename !== undefined && q.filename !== run.filename && q.filename !== processedFilename(run)) {
      throw new AppError("not_found", `filename: pipeline run '${run.id}' has no file named '${q.filename}'`);
    }
  } else {
    run = await findRunByProcessedName(ctx, { workspaceId, filename: q.filename! });
  }
  const key = requireProcessedJson(run, q.pipelineRunId !== undefined ? "pipelineRunId" : "filename");
  const source = await ctx.storage.get(key);
  if (!source) throw new AppError("not_found", `the processed file of pipeline run '${run.id}' is no longer stored`);
  const paged = q.offset !== undefined || q.limit !== undefined;
  return {
    pipelineRunId: run.id,
    filename: processedFilename(run),
    contentType: "application/json; charset=utf-8",
    body: paged ? rowsPage(source, q.offset ?? 0, q.limit ?? Number.POSITIVE_INFINITY) : source,
  };
}

const enc = new TextEncoder();
const OPEN = enc.encode("[\n");
const SEPARATOR = enc.encode(",\n");
const CLOSE_EMPTY = enc.encode("]\n");
const CLOSE = enc.encode("\n]\n");

/** Rows [offset, offset + limit) of a processed file, read as the consumer pulls and stopped once the last is out. */
function rowsPage(source: ReadableStream<Uint8Array>, offset: number, limit: number): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const end = offset + limit;
  let written = 0;
  let out: Uint8Array[] = [OPEN];
  const splitter = new RowSplitter((buf, start, stop, rowIndex) => {
    if (rowIndex < offset || rowIndex >= end) return;
    if (written++ > 0) out.push(SEPARATOR);
    out.push(buf.slice(start, stop));
  });
  let done = false;
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    out.push(written > 0 ? CLOSE : CLOSE_EMPTY);
    controller.enqueue(Buffer.concat(out));
    controller.close();
    done = true;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (!done) {
        const r = await reader.read();
        if (r.done) splitter.end();
        else {
          streamed(r.value.byteLength);
          splitter.push(r.value);
        }
        if (r.done || splitter.rows >= end) {
          if (!r.done) await reader.cancel();
          finish(controller);
          return;
        }
        if (out.length > 0) {
          controller.enqueue(Buffer.concat(out));
          out = [];
          return;
        }
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
