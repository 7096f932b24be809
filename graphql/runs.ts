import * as runs from "../src/services/runs";
import { RunUpdate, watchRuns } from "../src/services/run-path";
import { defined } from "./args";
import { builder } from "./builder";
import { enumNamed, outputType } from "./from-zod";
import { pageOf, paged } from "./page";

/** Pipeline runs: reads, the two client actions, and live updates. */

const PipelineRun = outputType(runs.PipelineRun);
const PipelineRunPage = pageOf("PipelineRun", PipelineRun);
const present = (rec: runs.RunRecord) => runs.presentRun(rec);

/** The filters both run lists take, as REST's query parameters. */
const filterArgs = (t: Parameters<Parameters<typeof builder.queryFields>[0]>[0]) => ({
  page: t.arg.int(),
  limit: t.arg.int(),
  status: t.arg({ type: enumNamed("PipelineRunStatus") }),
  direction: t.arg({ type: enumNamed("PipelineDirection"), description: "The pipeline's direction when the run started." }),
  clientId: t.arg.id({ description: "The originating connection." }),
  connectionName: t.arg.string({ description: "Part of the originating connection's name, any case." }),
  from: t.arg.string({ description: "Runs created at or after (ISO 8601 date or date-time)." }),
  to: t.arg.string({ description: "Runs created at or before; a date alone covers that whole day." }),
});

builder.queryFields((t) => ({
  run: t.field({
    nullable: true,
    type: PipelineRun,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => present(await runs.getRun(svc, { actor, id: String(id) })),
  }),
  runs: t.field({
    nullable: true,
    type: PipelineRunPage,
    description: "Runs across the workspace's pipelines, newest first.",
    args: { pipelineId: t.arg.id(), ...filterArgs(t) },
    resolve: async (_, args, { svc, actor }) => paged(await runs.listRuns(svc, { actor, query: defined(args) }), present),
  }),
  pipelineRuns: t.field({
    nullable: true,
    type: PipelineRunPage,
    description: "One pipeline's runs, newest first; also a deleted pipeline's, while it has any.",
    args: { pipelineId: t.arg.id({ required: true }), ...filterArgs(t) },
    resolve: async (_, { pipelineId, ...args }, { svc, actor }) =>
      paged(await runs.listPipelineRuns(svc, { actor, pipelineId: String(pipelineId), query: defined(args) }), present),
  }),
}));

builder.mutationFields((t) => ({
  acknowledgeRun: t.field({
    nullable: true,
    type: PipelineRun,
    description: "Sets the run's status to `acknowledged`, the only status a client may set.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) =>
      present(await runs.acknowledgeRun(svc, { actor, id: String(id), input: { status: "acknowledged" } })),
  }),
  reprocessRun: t.field({
    nullable: true,
    type: PipelineRun,
    description:
      "A new run from the run's original file, under the pipeline's current version or `version`; it names the run in `reprocessOf`, which is kept as it is.",
    args: { id: t.arg.id({ required: true }), version: t.arg.int({ description: "A version of the run's pipeline; default the current one." }) },
    resolve: async (_, { id, version }, { svc, actor }) => present(await runs.reprocessRun(svc, { actor, id: String(id), input: defined({ version }) })),
  }),
  retryRun: t.field({
    nullable: true,
    type: PipelineRun,
    description: "Processes a failed run again from its original file.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => present(await runs.retryRun(svc, { actor, id: String(id) })),
  }),
}));

builder.subscriptionType({});
builder.subscriptionFields((t) => ({
  runUpdated: t.field({
    type: outputType(RunUpdate),
    description:
      "Status changes of the workspace's runs: of one run (runId), one pipeline (pipelineId), or all of them (neither). " +
      "Over graphql-ws on /graphql (the key in connection_init's payload as `x-api-key`, or the upgrade request's header) or over SSE (`Accept: text/event-stream`).",
    args: { runId: t.arg.id(), pipelineId: t.arg.id() },
    subscribe: (_, args, { svc, actor }) => watchRuns(svc, { actor, query: defined(args) }),
    resolve: (update) => update,
  }),
}));
