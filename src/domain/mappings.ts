import { z } from "zod";

/**
 * How a pipeline reads a file and maps its rows: the shapes the engine
 * executes, the database stores (pipelines.mappings as JSON) and the
 * services accept. Kept here, below all three, so the engine and db/ import
 * no service.
 */

/** The closed list of transforms a field mapping may name (docs/decisions/mappings.md). */
export const TRANSFORMS = ["trim", "uppercase", "lowercase", "number", "integer", "boolean", "date", "datetime", "string"] as const;
export type Transform = (typeof TRANSFORMS)[number];

export const INPUT_FORMATS = ["csv", "tsv", "json", "ndjson", "xml", "fixed"] as const;
export const OUTPUT_FORMATS = ["csv", "json", "xml"] as const;
export const ENCODINGS = ["utf-8", "utf-16le", "latin1", "windows-1252"] as const;
export const ON_INVALID_ROW = ["fail", "skip", "quarantine"] as const;
export const HEADER_MATCHES = ["exact", "case-insensitive", "normalized"] as const;
export type HeaderMatch = (typeof HEADER_MATCHES)[number];
export const MISSING_COLUMNS = ["fail", "proceed"] as const;
export const EMPTY_CELLS = ["absent", "empty-string", "null"] as const;
export type EmptyCells = (typeof EMPTY_CELLS)[number];

const Transform = z
  .enum(TRANSFORMS, { error: (i) => `unknown transform '${typeof i.input === "string" ? i.input : JSON.stringify(i.input)}'; allowed: ${TRANSFORMS.join(", ")}` })
  .meta({ id: "Transform" });

const Column = z.string().min(1, "must not be empty").max(200, "must be at most 200 characters");

/**
 * One field mapping, in one of three forms: sourced (`source`), static
 * value (`value`, no source) or aggregated (`sources`, gated per workspace).
 */
export const FieldMapping = z
  .strictObject({
    target: Column,
    source: Column.optional(),
    value: z.string().max(10_000).optional(),
    sources: z.array(Column).min(1, "must list at least one column").max(50).optional(),
    delimiter: z.string().max(16, "must be at most 16 characters").optional(),
    transform: Transform.optional(),
  })
  .superRefine((m, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if (m.sources !== undefined) {
      if (m.source !== undefined) issue("source", "cannot be combined with sources");
      if (m.value !== undefined) issue("value", "cannot be combined with sources");
    } else {
      if (m.source !== undefined && m.value !== undefined) issue("value", "cannot be combined with source");
      if (m.source === undefined && m.value === undefined) issue("source", "one of source, value or sources is required");
      if (m.delimiter !== undefined) issue("delimiter", "only applies to a mapping with sources");
    }
  })
  .meta({ id: "FieldMapping" });
export type FieldMapping = z.output<typeof FieldMapping>;

export type MappingForm = "sourced" | "static" | "aggregated";
export function mappingForm(m: FieldMapping): MappingForm {
  return m.sources !== undefined ? "aggregated" : m.source !== undefined ? "sourced" : "static";
}

/** Fixed-width input: the layout of a record line (docs/decisions/formats.md). */
const Position = z.number().int("must be a whole number").min(1, "must be at least 1 (positions count from 1)").max(100_000, "must be at most 100000");
const FixedColumn = z
  .strictObject({ name: Column, start: Position, length: Position.optional(), end: Position.optional() })
  .superRefine((c, ctx) => {
    if ((c.length === undefined) === (c.end === undefined)) ctx.addIssue({ code: "custom", path: ["length"], message: "give either length or end (inclusive), not both" });
    if (c.end !== undefined && c.end < c.start) ctx.addIssue({ code: "custom", path: ["end"], message: `must be at least start (${c.start})` });
  })
  .meta({ id: "FixedWidthColumn" });
export const FixedWidthOptions = z
  .strictObject({
    columns: z
      .array(FixedColumn)
      .min(1, "must list at least one column")
      .max(1000, "must have at most 1000 entries")
      .superRefine((list, ctx) => {
        const seen = new Map<string, number>();
        list.forEach((c, i) => {
          const first = seen.get(c.name);
          if (first !== undefined) ctx.addIssue({ code: "custom", path: [i, "name"], message: `'${c.name}' is already the name of columns[${first}]` });
          else seen.set(c.name, i);
        });
      }),
    trim: z.enum(["both", "right", "none"], { error: "must be one of both, right, none" }).optional().meta({ description: "Blanks cut from each value (default both)." }),
    skipLines: z.number().int().min(0).max(1000).optional().meta({ description: "Lines before the first record." }),
    recordType: z
      .strictObject({ start: Position, value: z.string().min(1, "must not be empty").max(100) })
      .optional()
      .meta({ description: "Only lines holding value at position start are records; others are passed over." }),
  })
  .meta({ id: "FixedWidthOptions", description: "Positions count characters from 1; end is inclusive." });

/** How files are read. Unknown members are kept, so clients may store their own settings. */
export const MappingOptions = z
  .looseObject({
    format: z.enum(INPUT_FORMATS).optional().meta({ description: "Input format; inferred from the file name when absent." }),
    delimiter: z.string().min(1).max(4).optional(),
    quote: z.string().length(1).optional(),
    headerRow: z.boolean().optional().meta({ description: "CSV/TSV: the first row names the columns (default true)." }),
    skipEmptyLines: z.boolean().optional(),
    encoding: z.enum(ENCODINGS).optional(),
    recordPath: z.string().max(500).optional().meta({ description: "JSON/XML: dotted path to the repeated record element." }),
    outputFormat: z.enum(OUTPUT_FORMATS).optional().meta({ description: "Outbound: the delivered file's format." }),
    headerMatch: z
      .enum(HEADER_MATCHES, { error: `must be one of ${HEADER_MATCHES.join(", ")}` })
      .optional()
      .meta({ description: "How a mapping's source names a header column: exact (default), case-insensitive, or normalized (case, spaces and punctuation ignored)." }),
    missingColumns: z
      .enum(MISSING_COLUMNS, { error: `must be one of ${MISSING_COLUMNS.join(", ")}` })
      .optional()
      .meta({ description: "A mapped source column missing from the header: fail the run before any row (default), or proceed with it absent." }),
    emptyCells: z
      .enum(EMPTY_CELLS, { error: `must be one of ${EMPTY_CELLS.join(", ")}` })
      .optional()
      .meta({ description: "What an empty cell becomes: absent (default, so `required` catches it), the empty string, or null." }),
    pgpEncrypt: z
      .boolean()
      .optional()
      .meta({ description: "Outbound: encrypt the delivered file to the connection's pgpPartnerPublicKey (the name gets .pgp)." }),
    fixedWidth: FixedWidthOptions.optional().meta({ description: 'The layout read when format is "fixed".' }),
  })
  .superRefine((o, ctx) => {
    if (o.format === "fixed" && !o.fixedWidth) ctx.addIssue({ code: "custom", path: ["fixedWidth"], message: 'is required when format is "fixed"' });
    if (o.fixedWidth && o.format !== "fixed") ctx.addIssue({ code: "custom", path: ["format"], message: 'must be "fixed" when fixedWidth is set' });
  })
  .meta({ id: "MappingOptions" });

/** What a row that fails validation does to its run. */
export const MappingValidations = z
  .looseObject({
    onInvalidRow: z.enum(ON_INVALID_ROW).optional().meta({ description: "fail the run (default), skip the row, or quarantine it." }),
    maxInvalidRows: z.number().int().min(0).optional().meta({ description: "Error budget: the run fails past this many invalid rows." }),
    maxInvalidRatio: z.number().min(0).max(1).optional(),
  })
  .meta({ id: "MappingValidations" });

const mappingsError = (i: { input: unknown }) =>
  Array.isArray(i.input)
    ? "must be an object; field mappings go under mappings.fieldMappings, not as a bare array"
    : "must be an object with fieldMappings, options and validations";

const FieldMappings = z
  .array(FieldMapping)
  .max(1000, "must have at most 1000 entries")
  .superRefine((list, ctx) => {
    const seen = new Map<string, number>();
    list.forEach((f, i) => {
      const first = seen.get(f.target);
      if (first !== undefined) {
        ctx.addIssue({ code: "custom", path: [i, "target"], message: `'${f.target}' is already the target of fieldMappings[${first}]` });
      } else seen.set(f.target, i);
    });
  });

export const PipelineMappings = z
  .strictObject(
    {
      fieldMappings: FieldMappings.default([]),
      options: MappingOptions.default({}),
      validations: MappingValidations.default({}),
    },
    { error: mappingsError },
  )
  .meta({ id: "PipelineMappings" });
export type PipelineMappings = z.output<typeof PipelineMappings>;

/** On update, each member of `mappings` that is sent replaces the stored one; the others are kept. */
export const PipelineMappingsPatch = z
  .strictObject(
    {
      fieldMappings: FieldMappings.optional(),
      options: MappingOptions.optional(),
      validations: MappingValidations.optional(),
    },
    { error: mappingsError },
  )
  .meta({ id: "PipelineMappingsPatch" });
