import type { Core, PipelineRun } from "./client.js";
import { FpsError } from "./errors.js";
import { sleep } from "./retry.js";
import { readEvents } from "./sse.js";

/** Statuses after which a run changes only by a person's hand. */
export const FINAL_STATUSES: ReadonlySet<string> = new Set(["completed", "delivered", "failed", "acknowledged"]);

export interface FollowOptions {
  signal?: AbortSignal;
  /** Polling interval when no subscription can be opened (default 1,000 ms). */
  pollMs?: number;
  /** `false`: poll only, never subscribe. */
  live?: boolean;
}

const SUBSCRIPTION = "subscription Follow($runId: ID) { runUpdated(runId: $runId) { event { status } } }";

async function getRun(core: Core, id: string): Promise<PipelineRun> {
  const { data } = await core.api.GET("/pipeline-runs/{id}", { params: { path: { id } } });
  return data!;
}

/**
 * The run as it changes: its current record first, then the record after
 * each change, until it reaches a final status. Changes come from the
 * GraphQL subscription over server-sent events (`runUpdated`); when that
 * cannot be opened or breaks, the run is polled instead.
 */
export async function* followRun(core: Core, runId: string, opts: FollowOptions = {}): AsyncGenerator<PipelineRun> {
  const ac = new AbortController();
  const stop = () => ac.abort(opts.signal?.reason);
  opts.signal?.addEventListener("abort", stop, { once: true });
  let stream: ReadableStream<Uint8Array> | null = null;
  try {
    if (opts.live !== false) {
      // Subscribe before the first read, so a change between the two is not missed.
      stream = await core
        .rawFetch(`${core.baseUrl}/graphql`, {
          method: "POST",
          headers: core.headers({ "content-type": "application/json", accept: "text/event-stream" }),
          body: JSON.stringify({ query: SUBSCRIPTION, variables: { runId } }),
          signal: ac.signal,
        })
        .then((res: Response) => (res.ok && res.body && (res.headers.get("content-type") ?? "").includes("text/event-stream") ? res.body : null))
        .catch(() => null);
    }
    let run = await getRun(core, runId);
    let last = "";
    const changed = (r: PipelineRun) => {
      const key = `${r.status}|${r.updatedAt}|${JSON.stringify(r.metadata ?? null)}`;
      const yes = key !== last;
      last = key;
      return yes;
    };
    if (changed(run)) yield run;
    if (FINAL_STATUSES.has(run.status)) return;
    if (stream) {
      for await (const ev of readEvents(stream, ac.signal)) {
        if (ev.event === "complete") break;
        if (ev.event !== "next") continue;
        run = await getRun(core, runId);
        if (changed(run)) yield run;
        if (FINAL_STATUSES.has(run.status)) return;
      }
    }
    // No subscription, or it ended before the run did: poll.
    for (;;) {
      await sleep(opts.pollMs ?? 1000, opts.signal);
      run = await getRun(core, runId);
      if (changed(run)) yield run;
      if (FINAL_STATUSES.has(run.status)) return;
    }
  } finally {
    opts.signal?.removeEventListener("abort", stop);
    ac.abort();
  }
}

/** Resolves with the run once it reaches a final status (completed, delivered, failed or acknowledged). */
export interface WaitOptions extends FollowOptions {
  timeoutMs?: number;
  onUpdate?: (run: PipelineRun) => void;
}

export async function waitForRun(core: Core, runId: string, opts: WaitOptions = {}): Promise<PipelineRun> {
  const signals = [opts.signal, opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : undefined].filter((s): s is AbortSignal => !!s);
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  let last: PipelineRun | undefined;
  try {
    for await (const run of followRun(core, runId, { ...opts, signal })) {
      last = run;
      opts.onUpdate?.(run);
    }
  } catch (e) {
    if (signal?.aborted && opts.timeoutMs && !opts.signal?.aborted) {
      throw new FpsError({ statusCode: 0, error: "timeout", message: `run ${runId} did not finish within ${opts.timeoutMs} ms (last status: ${last?.status ?? "unknown"})` });
    }
    throw e;
  }
  if (!last) throw new FpsError({ statusCode: 0, error: "aborted", message: `following run ${runId} was stopped` });
  return last;
}
