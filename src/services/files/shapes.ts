import { z } from "zod";
import { Id } from "../shared/shapes";

export const MAX_SEARCH_RUNS = 100;
export const DEFAULT_SEARCH_LIMIT = 100;
export const MAX_SEARCH_LIMIT = 1000;
export const MAX_SEARCH_TERM = 1000;

export const RUN_FILE_KINDS = ["original", "processed", "rejects"] as const;
export type RunFileKind = (typeof RUN_FILE_KINDS)[number];

const WholeNumber = z.number({ error: "must be a whole number" }).int("must be a whole number");

export const SearchFilesInput = z
  .strictObject({
    pipelineRunIds: z
      .array(Id, { error: (i) => (i.input === undefined ? "is required" : "must be an array of pipeline run ids") })
      .min(1, "must list at least one pipeline run")
      .max(MAX_SEARCH_RUNS, `must list at most ${MAX_SEARCH_RUNS} pipeline runs`)
      .meta({ description: "Runs to search, in the order their hits are listed." }),
    searchTerm: z
      .string({ error: "must be a string" })
      .max(MAX_SEARCH_TERM, `must be at most ${MAX_SEARCH_TERM} characters`)
      .optional()
      .meta({ description: "Text to find in row values (numbers and booleans as their text). Omitted or empty: every row." }),
    fieldName: z
      .string({ error: "must be a string" })
      .min(1, "must not be empty")
      .max(200, "must be at most 200 characters")
      .optional()
      .meta({ description: "Look only in this field." }),
    exactMatch: z.boolean({ error: "must be true or false" }).default(false).meta({ description: "The whole value must equal the term." }),
    caseSensitive: z.boolean({ error: "must be true or false" }).default(false),
    offset: WholeNumber.min(0, "must be at least 0").default(0),
    limit: WholeNumber.min(1, "must be at least 1")
      .max(MAX_SEARCH_LIMIT, `must be at most ${MAX_SEARCH_LIMIT}`)
      .default(DEFAULT_SEARCH_LIMIT),
  })
  .meta({ id: "SearchFilesInput" });
export type SearchFilesInput = z.input<typeof SearchFilesInput>;

export const SearchHit = z
  .object({
    pipelineRunId: z.string(),
    filename: z.string().meta({ description: "The run's file name, as received." }),
    rowIndex: z.number().int().meta({ description: "0-based position of the row in the processed file (as the delta and `GET /files/json` count)." }),
    inputRow: z.number().int().nullable().meta({
      description:
        "The row's number in the received file, counted from 1 over the data rows (header excluded), as row errors and rejects name it. null for runs processed before rejects listed skipped rows.",
    }),
    rowData: z.record(z.string(), z.unknown()),
    matchingFields: z.array(z.string()).meta({ description: "Fields whose value matched; empty when no searchTerm was given." }),
    processedAt: z.date().nullable(),
    pipelineName: z.string(),
    clientName: z.string(),
  })
  .meta({ id: "SearchHit" });
export type SearchHit = z.output<typeof SearchHit>;

export const SearchPagination = z
  .object({ total: z.number().int(), offset: z.number().int(), limit: z.number().int(), returned: z.number().int() })
  .meta({ id: "SearchPagination" });

export const SearchFilesResult = z
  .object({
    results: z.array(SearchHit),
    pagination: SearchPagination,
    metadata: z.object({
      searchTerm: z.string().nullable(),
      caseSensitive: z.boolean(),
      searchDurationMs: z.number().int(),
      filesSearched: z.number().int().meta({ description: "Runs whose processed file was read; runs without one are skipped." }),
    }),
  })
  .meta({ id: "SearchFilesResult" });
export type SearchFilesResult = z.output<typeof SearchFilesResult>;

export const FileLink = z
  .object({
    url: z.string().meta({ description: "Works without the API key until it expires; bound to GET and to this file." }),
    filename: z.string(),
    expiresIn: z.number().int().meta({ description: "Seconds the link stays valid." }),
    mimetype: z.string(),
  })
  .meta({ id: "FileLink" });
export type FileLink = z.output<typeof FileLink>;

const QueryWholeNumber = z.coerce.number({ error: "must be a whole number" }).int("must be a whole number");

export const ProcessedJsonQuery = z
  .object({
    pipelineRunId: Id.optional().meta({ description: "The run whose processed file to return." }),
    filename: z
      .string()
      .min(1, "must not be empty")
      .max(500, "must be at most 500 characters")
      .optional()
      .meta({
        description:
          "Instead of pipelineRunId: the processed file's name (`orders.processed.json`) or the received file's name (`orders.csv`); the newest processed run of the workspace with that name is returned.",
      }),
    offset: QueryWholeNumber.min(0, "must be at least 0").optional().meta({ description: "Rows to skip (paging); the reply is still a JSON array." }),
    limit: QueryWholeNumber.min(1, "must be at least 1").optional().meta({ description: "Rows to return at most (paging)." }),
  })
  .superRefine((q, ctx) => {
    if (q.pipelineRunId === undefined && q.filename === undefined) {
      ctx.addIssue({ code: "custom", path: ["pipelineRunId"], message: "is required (or filename)" });
    }
  });
export type ProcessedJsonQuery = z.input<typeof ProcessedJsonQuery>;
