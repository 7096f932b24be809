import { z } from "zod";
import type { AuditActor } from "./actors";

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

/** Who made a version: the audit log's actor. */
export type VersionActor = AuditActor;
