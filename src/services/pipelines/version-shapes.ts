import { z } from "zod";
import { AuditActor } from "../audit/shapes";
import { PageQuery } from "../shared/shapes";
import { VERSION_REASONS, VersionChanges } from "../../domain/pipeline-versions";
import { PipelineMappings } from "./shapes";

// What a version records is stored in db/ too, so it lives in src/domain; re-exported here.
export {
  VERSION_REASONS,
  VERSIONED_FIELDS,
  VersionChanges,
  type VersionActor,
  type VersionedField,
  type VersionReason,
} from "../../domain/pipeline-versions";

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
