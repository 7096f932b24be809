import { z } from "zod";
import { Name, PageQuery } from "../shared/shapes";

const Definition = z
  .record(z.string(), z.unknown(), { error: (i) => (i.input === undefined ? "is required" : "must be a JSON Schema object") })
  .meta({ description: "JSON Schema of one row: type 'object', properties, required." });

const Description = z.string().max(2000, "must be at most 2000 characters").nullable().optional();

export const CreateSchemaInput = z
  .strictObject({
    name: Name,
    definition: Definition,
    description: Description,
    /** Legacy member of the older API: accepted and ignored. */
    fields: z.unknown().optional().meta({ deprecated: true, description: "Ignored; define columns in definition." }),
  })
  .meta({ id: "CreateSchemaInput" });
export type CreateSchemaInput = z.input<typeof CreateSchemaInput>;

export const UpdateSchemaInput = z
  .strictObject({
    name: Name.optional(),
    definition: Definition.optional(),
    description: Description,
    fields: z.unknown().optional().meta({ deprecated: true, description: "Ignored; define columns in definition." }),
  })
  .meta({ id: "UpdateSchemaInput" });
export type UpdateSchemaInput = z.input<typeof UpdateSchemaInput>;

/** Response members a client may send back unchanged; ignored on input (`isActive` is always true). */
export const SCHEMA_READ_ONLY = ["id", "workspaceId", "createdAt", "updatedAt", "isActive"] as const;

export const ListSchemasQuery = PageQuery.extend({ name: z.string().max(200).optional() });

export const Schema = z
  .object({
    id: z.string(),
    name: z.string(),
    workspaceId: z.string(),
    description: z.string().optional(),
    definition: z.record(z.string(), z.unknown()),
    isActive: z.boolean(),
    createdAt: z.date(),
    updatedAt: z.date(),
  })
  .meta({ id: "Schema" });
export type Schema = z.output<typeof Schema>;
