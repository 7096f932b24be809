import { lexicographicSortSchema, printSchema } from "graphql";
import * as connections from "../src/services/connections";
import * as pipelines from "../src/services/pipelines";
import * as schemas from "../src/services/schemas";
import { DeleteResult } from "../src/services/shared/shapes";
import * as webhooks from "../src/services/webhooks";
import { defined } from "./args";
import { builder } from "./builder";
import { enumNamed, inputType, outputType } from "./from-zod";
import { pageOf, paged } from "./page";
import "./notifications";
import "./arrivals";
import "./audit";
// Before the first generated type: from-zod reads the shape registry once.
import "./outbound";
import "./files";
import "./documents";
import "./runs";
import "./webhooks";
import "./preview";

const Connection = outputType(connections.Connection);
const Schema = outputType(schemas.Schema);
const Pipeline = outputType(pipelines.Pipeline);
const Webhook = outputType(webhooks.Webhook);
const Deleted = outputType(DeleteResult);
const ConnectionPage = pageOf("Connection", Connection);
const SchemaPage = pageOf("Schema", Schema);
const PipelinePage = pageOf("Pipeline", Pipeline);
const WebhookPage = pageOf("Webhook", Webhook);
const PipelineVersionPage = pageOf("PipelineVersion", outputType(pipelines.PipelineVersion));

/**
 * Root fields are nullable, as GraphQL advises: one refused field (say a
 * NOT_FOUND) answers null with its error, and leaves the rest of the
 * response, and mutations that already ran, visible.
 */
builder.queryFields((t) => ({
  connection: t.field({
    nullable: true,
    type: Connection,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => connections.presentConnection(svc, await connections.getConnection(svc, { actor, id: String(id) })),
  }),
  connections: t.field({
    nullable: true,
    type: ConnectionPage,
    args: { page: t.arg.int(), limit: t.arg.int(), type: t.arg({ type: enumNamed("ConnectionType") }), name: t.arg.string() },
    resolve: async (_, args, { svc, actor }) =>
      paged(await connections.listConnections(svc, { actor, query: defined(args) }), (r) =>
        connections.presentConnection(svc, r),
      ),
  }),
  schema: t.field({
    nullable: true,
    type: Schema,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => schemas.presentSchema(await schemas.getSchema(svc, { actor, id: String(id) })),
  }),
  schemas: t.field({
    nullable: true,
    type: SchemaPage,
    args: { page: t.arg.int(), limit: t.arg.int(), name: t.arg.string() },
    resolve: async (_, args, { svc, actor }) => paged(await schemas.listSchemas(svc, { actor, query: defined(args) }), schemas.presentSchema),
  }),
  pipeline: t.field({
    nullable: true,
    type: Pipeline,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => pipelines.presentPipeline(await pipelines.getPipeline(svc, { actor, id: String(id) })),
  }),
  pipelines: t.field({
    nullable: true,
    type: PipelinePage,
    description: "Filters: clientId, connectionName (part of the name, any case), direction, isActive.",
    args: {
      page: t.arg.int(),
      limit: t.arg.int(),
      clientId: t.arg.id(),
      connectionName: t.arg.string(),
      direction: t.arg({ type: enumNamed("PipelineDirection") }),
      isActive: t.arg.boolean(),
    },
    resolve: async (_, args, { svc, actor }) =>
      paged(await pipelines.listPipelines(svc, { actor, query: defined(args) }), pipelines.presentPipeline),
  }),
  pipelineVersions: t.field({
    nullable: true,
    type: PipelineVersionPage,
    description: "A pipeline's versions, newest first: what changed, who changed it and when.",
    args: { id: t.arg.id({ required: true }), page: t.arg.int(), limit: t.arg.int() },
    resolve: async (_, { id, ...args }, { svc, actor }) =>
      paged(await pipelines.listPipelineVersions(svc, { actor, id: String(id), query: defined(args) }), pipelines.presentVersion),
  }),
  webhook: t.field({
    nullable: true,
    type: Webhook,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_, { id }, { svc, actor }) => webhooks.presentWebhook(await webhooks.getWebhook(svc, { actor, id: String(id) })),
  }),
  webhooks: t.field({
    nullable: true,
    type: WebhookPage,
    description: "kind: WEBHOOK (linked to pipelines) or PIPELINE_RUN_EVENT (automation-platform subscriptions); both when left out.",
    args: { page: t.arg.int(), limit: t.arg.int(), kind: t.arg({ type: enumNamed("WebhookKind") }) },
    resolve: async (_, args, { svc, actor }) => paged(await webhooks.listWebhooks(svc, { actor, query: defined(args) }), webhooks.presentWebhook),
  }),
}));

builder.mutationFields((t) => ({
  createConnection: t.field({
    nullable: true,
    type: Connection,
    args: { input: t.arg({ type: inputType(connections.CreateConnectionInput), required: true }) },
    resolve: async (_, { input }, { svc, actor }) =>
      connections.presentConnection(svc, await connections.createConnection(svc, { actor, input })),
  }),
  updateConnection: t.field({
    nullable: true,
    type: Connection,
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: inputType(connections.UpdateConnectionInput), required: true }) },
    resolve: async (_, { id, input }, { svc, actor }) =>
      connections.presentConnection(svc, await connections.updateConnection(svc, { actor, id: String(id), input })),
  }),
  deleteConnection: t.field({
    nullable: true,
    type: Deleted,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_, { id }, { svc, actor }) => connections.deleteConnection(svc, { actor, id: String(id) }),
  }),
  testConnection: t.field({
    nullable: true,
    type: outputType(connections.ConnectionTestResult),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_, { id }, { svc, actor }) => connections.testConnection(svc, { actor, id: String(id) }),
  }),
  createSchema: t.field({
    nullable: true,
    type: Schema,
    args: { input: t.arg({ type: inputType(schemas.CreateSchemaInput), required: true }) },
    resolve: async (_, { input }, { svc, actor }) => schemas.presentSchema(await schemas.createSchema(svc, { actor, input })),
  }),
  updateSchema: t.field({
    nullable: true,
    type: Schema,
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: inputType(schemas.UpdateSchemaInput), required: true }) },
    resolve: async (_, { id, input }, { svc, actor }) =>
      schemas.presentSchema(await schemas.updateSchema(svc, { actor, id: String(id), input })),
  }),
  deleteSchema: t.field({
    nullable: true,
    type: Deleted,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_, { id }, { svc, actor }) => schemas.deleteSchema(svc, { actor, id: String(id) }),
  }),
  createPipeline: t.field({
    nullable: true,
    type: Pipeline,
    args: { input: t.arg({ type: inputType(pipelines.CreatePipelineInput), required: true }) },
    resolve: async (_, { input }, { svc, actor }) =>
      pipelines.presentPipeline(await pipelines.createPipeline(svc, { actor, input })),
  }),
  updatePipeline: t.field({
    nullable: true,
    type: Pipeline,
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: inputType(pipelines.UpdatePipelineInput), required: true }) },
    resolve: async (_, { id, input }, { svc, actor }) =>
      pipelines.presentPipeline(await pipelines.updatePipeline(svc, { actor, id: String(id), input })),
  }),
  deletePipeline: t.field({
    nullable: true,
    type: Deleted,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_, { id }, { svc, actor }) => pipelines.deletePipeline(svc, { actor, id: String(id) }),
  }),
  createWebhook: t.field({
    nullable: true,
    type: outputType(webhooks.CreatedWebhook),
    description: "The result carries the signing secret; it is never returned again.",
    args: { input: t.arg({ type: inputType(webhooks.CreateWebhookInput), required: true }) },
    resolve: (_, { input }, { svc, actor }) => webhooks.createWebhook(svc, { actor, input }),
  }),
  updateWebhook: t.field({
    nullable: true,
    type: Webhook,
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: inputType(webhooks.UpdateWebhookInput), required: true }) },
    resolve: async (_, { id, input }, { svc, actor }) =>
      webhooks.presentWebhook(await webhooks.updateWebhook(svc, { actor, id: String(id), input })),
  }),
  deleteWebhook: t.field({
    nullable: true,
    type: Deleted,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_, { id }, { svc, actor }) => webhooks.deleteWebhook(svc, { actor, id: String(id) }),
  }),
}));

export const schema = builder.toSchema();
export const printedSchema = () => printSchema(lexicographicSortSchema(schema));
