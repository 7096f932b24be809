import { z } from "zod";
import { AuditActor } from "../audit/shapes";
import { PageQuery } from "../shared/shapes";
import { PipelineMappings } from "./shapes";

/** Why a version was made (docs/decisions/pipeline-versions.md). */
export const VERSION_REASONS = ["created", "updated", "schemaUpdated", "migrated"] as const;
export type VersionReason = (typeof VERSION_REASONS)[number];

/** The members of a pipeline whose change makes a new version: what decides how a file is processed. */
export const VERSIONED_FIELDS = ["mappings.fieldMappings", "mappings.options", "mappings.validations", "schemaId", "schema.definition"] as const;
export type VersionedField = (typeof VERSIONED_FIELDS)[number];

const Targets = z.array(z.string());

export const VersionChanges = z
  .object({
    fields: z.array(z.enum(VERSIONED_FIELDS)).meta({ description: "Which versioned members changed from the version before; empty for version 1." }),
    fieldMappings: z
      .object({
        added: Targets.meta({ description: "Targets mapped now and not before." }),
        removed: Targets.meta({ description: "Targets mapped before and not now." }),
        changed: Targets.meta({ description: "Targets mapped in both, differently (source, value, sources, delimiter or transform)." }),
      })
      .optional()
      .meta({ id: "FieldMappingChanges", description: "By target; present when mappings.fieldMappings changed." }),
    options: z.array(z.string()).optional().meta({ description: "Names of the mappings.options members set, changed or removed." }),
    validations: z.array(z.string()).optional().meta({ description: "Names of the mappings.validations members set, changed or removed." }),
    schemaId: z.object({ from: z.string(), to: z.string() }).optional().meta({ id: "SchemaIdChange", description: "The schema the pipeline points at, before and after." }),
  })
  .meta({ id: "PipelineVersionChanges" });
export type VersionChanges = z.output<typeof VersionChanges>;

export type VersionActor = AuditActor;

export const PipelineVersion = z
  .object({
    pipelineId: z.string(),
    version: z.number().int().meta({ description: "1 for the pipeline as created (or as it stood when versions began); one more for each change." }),
    reason: z.enum(VERSION_REASONS).meta({
      id: "PipelineVersionReason",
      description: "created; updated (the pipeline's mappings or schemaId); schemaUpdated (its schema's definition); migrated (the pipeline as it stood when versions began).",
    }),
    changes: VersionChanges,
    mappings: PipelineMappings.meta({ description: "The mappings this version processes files with." }),
    schemaId: z.string().meta({ description: "The schema this version validates against (its definition as it was is kept with the version)." }),
    createdBy: AuditActor.optional().meta({ description: "Who made the change, as the audit log names them; absent for a migrated version." }),
    requestId: z.string().optional().meta({ description: "The request that made it, when known." }),
    createdAt: z.date(),
  })
  .meta({ id: "PipelineVersion", description: "What a pipeline processed files with from one change to the next." });
export type PipelineVersion = z.output<typeof PipelineVersion>;

/** `GET /pipelines/{id}/versions`: newest first. */
export const ListPipelineVersionsQuery = PageQuery;
export type ListPipelineVersionsQuery = z.input<typeof ListPipelineVersionsQuery>;
