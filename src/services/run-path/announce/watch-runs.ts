import type { RunEvent } from "../../../adapters/events/port";
import { isAppError } from "../../../domain/errors";
import { parseInput } from "../../../domain/validation";
import { type ApiVersion, LATEST_VERSION } from "../../../domain/versions";
import type { CallOptions, ServiceContext } from "../../context";
import { getRun, listPipelineRuns, presentRun } from "../../runs";
import { type RunUpdate, WatchRunsQuery } from "./watch-shapes";

/**
 * Live updates of the caller's runs: one run, one pipeline's runs, or the
 * whole workspace. The filter is checked like a read (another workspace's
 * run or pipeline is NOT_FOUND) before anything is delivered, and the bus
 * only ever hands over the caller's workspace's events. Each update carries
 * the run as it is when delivered, read through the same presenter as REST.
 *
 * The subscription starts before the check, so nothing between the check
 * and the first event is lost. It ends when the signal aborts, when the
 * consumer calls return(), or when the service stops.
 */
export async function watchRuns(
  ctx: ServiceContext,
  opts: CallOptions & { query?: unknown; signal?: AbortSignal },
): Promise<AsyncIterableIterator<RunUpdate>> {
  const query = parseInput(WatchRunsQuery, opts.query ?? {});
  const { actor } = opts;
  const version = opts.version ?? LATEST_VERSION;
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  if (opts.signal?.aborted) stop.abort();
  const events = ctx.events.subscribe({ workspaceId: actor.workspaceId, runId: query.runId, pipelineId: query.pipelineId }, stop.signal);
  try {
    if (query.runId) await getRun(ctx, { actor, id: query.runId });
    if (query.pipelineId) await listPipelineRuns(ctx, { actor, pipelineId: query.pipelineId, query: { limit: 1 } });
  } catch (e) {
    stop.abort();
    throw e;
  }

  async function* updates(): AsyncGenerator<RunUpdate> {
    try {
      for await (const event of events) yield { event, run: await currentRun(ctx, opts, event, version) };
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }
  const gen = updates();
  // An async generator waiting for the next event would only see return() once
  // one arrives; ending the bus subscription first lets it finish at once.
  const it: AsyncIterableIterator<RunUpdate> = {
    next: () => gen.next(),
    return: (value?: unknown) => {
      stop.abort();
      return gen.return(value as never);
    },
    throw: (error?: unknown) => {
      stop.abort();
      return gen.throw(error);
    },
    [Symbol.asyncIterator]: () => it,
  };
  return it;
}

async function currentRun(ctx: ServiceContext, opts: CallOptions, event: RunEvent, version: ApiVersion) {
  try {
    return presentRun(await getRun(ctx, { actor: opts.actor, id: event.runId }), version);
  } catch (e) {
    if (isAppError(e) && e.code === "not_found") return null;
    throw e;
  }
}
