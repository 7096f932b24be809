import { z } from "zod";
import { PipelineMappings, PipelineMappingsPatch } from "../../domain/mappings";
import { Id, Name, PageQuery, QueryBool } from "../shared/shapes";

// The mapping shapes live in src/domain (the engine and db/ share them); re-exported for the services and transports.
export {
  EMPTY_CELLS,
  ENCODINGS,
  type EmptyCells,
  FieldMapping,
  FixedWidthOptions,
  HEADER_MATCHES,
  type HeaderMatch,
  INPUT_FORMATS,
  MISSING_COLUMNS,
  MappingOptions,
  type MappingForm,
  MappingValidations,
  mappingForm,
  ON_INVALID_ROW,
  OUTPUT_FORMATS,
  PipelineMappings,
  PipelineMappingsPatch,
  TRANSFORMS,
  type Transform,
} from "../../domain/mappings";

export const DIRECTIONS = ["inbound", "outbound"] as const;
export type Direction = (typeof DIRECTIONS)[number];

const DirectionShape = z.enum(DIRECTIONS, { error: `must be one of ${DIRECTIONS.join(", ")}` }).meta({ id: "PipelineDirection" });

const WebhookIds = z.array(Id).max(50, "must have at most 50 entries");

export const CreatePipelineInput = z
  .strictObject({
    name: Name,
    mappings: PipelineMappings.default({ fieldMappings: [], options: {}, validations: {} }),
    clientId: Id,
    schemaId: Id,
    direction: DirectionShape.default("inbound"),
    isActive: z.boolean().default(true),
    webhookIds: WebhookIds.optional(),
  })
  .meta({ id: "CreatePipelineInput" });
export type CreatePipelineInput = z.input<typeof CreatePipelineInput>;

export const UpdatePipelineInput = z
  .strictObject({
    name: Name.optional(),
    mappings: PipelineMappingsPatch.optional(),
    clientId: Id.optional(),
    schemaId: Id.optional(),
    direction: DirectionShape.optional(),
    isActive: z.boolean().optional(),
    webhookIds: WebhookIds.optional().meta({ description: "Replaces the linked webhooks; [] unlinks all." }),
  })
  .meta({ id: "UpdatePipelineInput" });
export type UpdatePipelineInput = z.input<typeof UpdatePipelineInput>;

/** Response members a client may send back unchanged; ignored on input. */
export const PIPELINE_READ_ONLY = ["id", "workspaceId", "createdAt", "updatedAt", "webhooks", "version"] as const;

export const ListPipelinesQuery = PageQuery.extend({
  clientId: Id.optional(),
  connectionId: Id.optional(),
  connectionName: z.string().max(200).optional(),
  clientName: z.string().max(200).optional().meta({ deprecated: true, description: "Alias of connectionName." }),
  direction: z.enum(DIRECTIONS, { error: `must be one of ${DIRECTIONS.join(", ")}` }).optional(),
  isActive: QueryBool.optional(),
});

export const WebhookRef = z.object({ id: z.string(), name: z.string(), url: z.string() }).meta({ id: "WebhookRef" });

export const Pipeline = z
  .object({
    id: z.string(),
    name: z.string(),
    workspaceId: z.string(),
    mappings: PipelineMappings,
    isActive: z.boolean(),
    clientId: z.string(),
    schemaId: z.string(),
    direction: DirectionShape,
    webhooks: z.array(WebhookRef).optional().meta({ description: "Present only when webhooks are linked." }),
    version: z.number().int().meta({
      description: "The current version: 1 at creation, one more for each change of the mappings, the schemaId or the schema's definition (GET /pipelines/{id}/versions).",
    }),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "Pipeline" });
export type Pipeline = z.output<typeof Pipeline>;
