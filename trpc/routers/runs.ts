import { z } from "zod";
import * as delta from "../../src/services/delta";
import { type WatchRunsQuery, watchRuns } from "../../src/services/run-path";
import * as runs from "../../src/services/runs";
import { pagination } from "../../src/services/shared/shapes";
import { ById, input, procedure, router } from "../init";

/** What a typed client may filter by; the services check the values. */
type ListInput = z.input<typeof runs.ListRunsQuery>;
type PipelineListInput = z.input<typeof runs.ListPipelineRunsQuery> & { pipelineId: string };

/** The pipeline's id; the other members are the list's filters, which the service checks. */
const ByPipeline = z.looseObject({ pipelineId: z.string({ error: "is required" }).min(1, "must not be empty") });

const page = (p: { items: runs.RunRecord[]; page: number; limit: number; total: number }) => ({
  data: p.items.map((r) => runs.presentRun(r)),
  pagination: pagination(p),
});

export const runsRouter = router({
  list: procedure.input(input<ListInput | undefined>()).query(async ({ ctx, input: query }) =>
    page(await runs.listRuns(ctx.svc, { actor: ctx.actor, query: query ?? {} })),
  ),
  listByPipeline: procedure
    .input(input<PipelineListInput>())
    .query(async ({ ctx, input: raw }) => {
      const { pipelineId, ...query } = ByPipeline.parse(raw);
      return page(await runs.listPipelineRuns(ctx.svc, { actor: ctx.actor, pipelineId, query }));
    }),
  get: procedure.input(ById).query(async ({ ctx, input: { id } }) => runs.presentRun(await runs.getRun(ctx.svc, { actor: ctx.actor, id }))),
  /** Sets `acknowledged`, the only status a client may set. */
  acknowledge: procedure
    .input(ById)
    .mutation(async ({ ctx, input: { id } }) =>
      runs.presentRun(await runs.acknowledgeRun(ctx.svc, { actor: ctx.actor, id, input: { status: "acknowledged" } })),
    ),
  retry: procedure.input(ById).mutation(async ({ ctx, input: { id } }) => runs.presentRun(await runs.retryRun(ctx.svc, { actor: ctx.actor, id }))),
  /** A new run from the run's original file, under the pipeline's current version or `version`; linked by `reprocessOf`. */
  reprocess: procedure
    .input(input<{ id: string } & runs.ReprocessRunInput>())
    .mutation(async ({ ctx, input: raw }) => {
      const { id, ...data } = ById.loose().parse(raw);
      return runs.presentRun(await runs.reprocessRun(ctx.svc, { actor: ctx.actor, id, input: data }));
    }),
  delta: procedure
    .input(input<delta.DeltaQuery>())
    .query(({ ctx, input: query }) => delta.getRunDelta(ctx.svc, { actor: ctx.actor, query: (query ?? {}) as Record<string, unknown> })),
  /**
   * Live status changes of one run, one pipeline's runs, or (no input) the
   * whole workspace; over HTTP as server-sent events. The filter is checked
   * before the stream starts, so a foreign id is NOT_FOUND like a read.
   */
  onUpdate: procedure
    .input(input<WatchRunsQuery | undefined>())
    .subscription(({ ctx, input: query, signal }) => watchRuns(ctx.svc, { actor: ctx.actor, query: query ?? {}, signal })),
});
